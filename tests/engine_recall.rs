#![cfg(not(target_arch = "wasm32"))]
//! Recall of past conversations (`engine::memory::recall`, issue 26 item 5): which messages refer
//! back to something said before, which words are looked up, which passages a prompt carries and
//! how the assembly places them (`SectionKind::Recall`, within `RECALL_SHARE_PERCENT`).

use memoire::engine::assemble::{assemble, Assembly, AssemblyInput, SectionKind};
use memoire::engine::memory::recall::*;
use memoire::engine::model::*;
use memoire::engine::tokens::HeuristicEstimator;

const DAY: i64 = 86_400_000;
/// 2026-11-20 00:00 UTC.
const NOV_20: i64 = 1_795_132_800_000;

fn msg(conv: &str, id: &str, role: Role, text: &str, day: i64) -> Message {
    let mut m = Message::from_user(
        id.into(),
        conv,
        text.into(),
        NOV_20 + day * DAY,
        MessageMeta::default(),
    );
    m.role = role;
    m
}

fn found(conv: &str, title: &str, id: &str, role: Role, text: &str, day: i64) -> Found {
    Found {
        message: msg(conv, id, role, text, day),
        title: title.into(),
        private: false,
    }
}

/// `text` refers back to something said before exactly when `expected`.
fn check_refers(text: &str, expected: bool) {
    assert_eq!(refers_back(text), expected, "{text:?}");
}

#[test]
fn a_message_refers_back_by_its_cues() {
    check_refers("Do you remember the name of that bakery in Porto?", true);
    check_refers("What did I tell you last time about the garden?", true);
    check_refers("As I mentioned, the deadline moved.", true);
    check_refers("We talked about my sister's wedding, where was it?", true);
    check_refers(
        "In the other chat you said the hotel was by the river.",
        true,
    );
    check_refers("You said it would rain.", true);
    check_refers("What is the capital of Norway?", false);
    check_refers("Give me three tips for a clear email.", false);
    check_refers("It's time for lunch, what should I cook?", false);
    check_refers("", false);
}

/// The words looked up for `text`, in order.
fn check_words(text: &str, expected: &[&str]) {
    assert_eq!(lookup_words(text), expected, "{text:?}");
}

#[test]
fn the_longest_content_words_are_looked_up() {
    check_words(
        "Do you remember the name of that bakery in Porto?",
        &["bakery", "porto", "name"],
    );
    check_words(
        "What did I tell you last time about the garden tomatoes?",
        &["tomatoes", "garden"],
    );
    check_words("Remember what we said?", &[]);
    check_words(
        "Remember the quarterly budget spreadsheet for the Oslo office renovation?",
        &["spreadsheet", "renovation", "quarterly", "budget"],
    );
    check_words("Remember room 42?", &["room", "42"]);
}

/// The message ids of the passages ranked from `found` for `words` in conversation `here`.
fn check_rank(found: Vec<Found>, words: &[&str], here: &str, expected: &[&str]) {
    let words: Vec<String> = words.iter().map(|w| w.to_string()).collect();
    let got: Vec<String> = rank(found, &words, here)
        .into_iter()
        .map(|p| p.message_id)
        .collect();
    assert_eq!(got, expected);
}

#[test]
fn passages_hold_two_looked_up_words_and_rarer_words_weigh_more() {
    let f = vec![
        found(
            "a",
            "Garden",
            "a1",
            Role::User,
            "The tomatoes go along the south fence of the garden.",
            1,
        ),
        found(
            "b",
            "Cooking",
            "b1",
            Role::User,
            "I roasted tomatoes with garlic.",
            2,
        ),
        found(
            "c",
            "Garden tools",
            "c1",
            Role::User,
            "The garden shed needs a new lock.",
            3,
        ),
    ];
    check_rank(f.clone(), &["tomatoes", "garden"], "z", &["a1"]);
    // One word looked up: one is enough; newer first among equals.
    check_rank(f, &["tomatoes"], "z", &["b1", "a1"]);
}

#[test]
fn the_asking_conversation_private_deleted_failed_and_duplicates_are_left_out() {
    let mut private = found("p", "Private", "p1", Role::User, "garden tomatoes", 1);
    private.private = true;
    let mut deleted = found("d", "D", "d1", Role::User, "garden tomatoes", 1);
    deleted.message.meta.deleted = true;
    let mut failed = found("e", "E", "e1", Role::Assistant, "garden tomatoes", 1);
    failed.message.status = MessageStatus::Error;
    let ok = found("a", "A", "a1", Role::User, "garden tomatoes", 1);
    let here = found("z", "Here", "z1", Role::User, "garden tomatoes", 5);
    check_rank(
        vec![private, deleted, failed, ok.clone(), ok, here],
        &["garden", "tomatoes"],
        "z",
        &["a1"],
    );
}

#[test]
fn the_user_before_the_agent_at_most_two_per_conversation_and_three_in_all() {
    let text = "garden tomatoes";
    let f = vec![
        found("a", "A", "a1", Role::Assistant, text, 9),
        found("a", "A", "a2", Role::User, text, 1),
        found("a", "A", "a3", Role::User, text, 2),
        found("b", "B", "b1", Role::User, text, 3),
        found("c", "C", "c1", Role::User, text, 4),
    ];
    check_rank(f, &["garden", "tomatoes"], "z", &["c1", "b1", "a3"]);
    let f = vec![
        found("a", "A", "a1", Role::User, text, 7),
        found("a", "A", "a2", Role::User, text, 8),
        found("a", "A", "a3", Role::User, text, 9),
        found("b", "B", "b1", Role::User, text, 1),
    ];
    check_rank(f, &["garden", "tomatoes"], "z", &["a3", "a2", "b1"]);
}

#[test]
fn a_long_message_is_cut_around_its_first_matched_word() {
    let long = format!(
        "{} The bakery was called Nata Lisboa. {}",
        "x ".repeat(300),
        "y ".repeat(300)
    );
    let p = rank(
        vec![found("a", "Trip", "a1", Role::User, &long, 1)],
        &["bakery".to_string(), "nata".to_string()],
        "z",
    );
    assert!(
        p[0].text.contains("The bakery was called Nata Lisboa."),
        "{}",
        p[0].text
    );
    assert!(p[0].text.starts_with('…') && p[0].text.ends_with('…'));
    assert!(p[0].text.chars().count() <= PASSAGE_CHARS + 2);
}

#[test]
fn a_passage_line_cites_who_where_and_when() {
    let p = rank(
        vec![found(
            "a",
            "Trip to Porto",
            "a1",
            Role::User,
            "The bakery was Nata Lisboa.",
            3,
        )],
        &["bakery".to_string()],
        "z",
    );
    assert_eq!(
        passage_line(&p[0]),
        "- The user, in “Trip to Porto” on 2026-11-23: \"The bakery was Nata Lisboa.\""
    );
    assert_eq!(passages_detail(&p), "“Trip to Porto”, 2026-11-23");
}

fn assembled(recall: &[Passage], context_tokens: u32) -> Assembly {
    let config = MemoryConfig {
        context_tokens,
        reply_reserve_tokens: 0,
        ..MemoryConfig::default()
    };
    let new = msg("z", "n", Role::User, "Do you remember the bakery?", 10);
    assemble(
        &AssemblyInput {
            system_prompt: "You are helpful.",
            summary: None,
            entities: &[],
            history: &[],
            new_message: &new,
            config: &config,
            protocol: Protocol::OpenAiChat,
            user_facts: &[],
            recall,
        },
        &HeuristicEstimator,
    )
}

fn passages(n: usize, words_each: usize) -> Vec<Passage> {
    (0..n)
        .map(|i| Passage {
            conversation_id: format!("c{i}"),
            message_id: format!("m{i}"),
            title: format!("Conversation {i}"),
            role: Role::User,
            said_at: NOV_20,
            text: format!("bakery {}", "word ".repeat(words_each)),
        })
        .collect()
}

#[test]
fn the_assembly_carries_the_best_passages_that_fit_their_share() {
    let a = assembled(&passages(3, 5), 4000);
    let s = a.section(SectionKind::Recall).expect("a recall section");
    assert_eq!(s.message_ids, ["m0", "m1", "m2"]);
    assert!(s.text.starts_with(RECALL_HEADING));
    assert!(a.recall_detail.contains("“Conversation 0”, 2026-11-20"));
    let system = &a.sections[0];
    assert_eq!(system.kind, SectionKind::System);
    // Within 10% of 1,000 tokens: the first passage fits, not all three long ones.
    let a = assembled(&passages(3, 40), 1000);
    let s = a.section(SectionKind::Recall).expect("the best one fits");
    assert_eq!(s.message_ids, ["m0"]);
    assert!(s.tokens <= 100);
    // None fits: no section, nothing said of it.
    let a = assembled(&passages(1, 200), 1000);
    assert!(a.section(SectionKind::Recall).is_none());
    assert!(a.recall_detail.is_empty());
    assert!(assembled(&[], 4000).section(SectionKind::Recall).is_none());
}

#[test]
fn the_passages_go_into_the_system_text_after_the_facts_about_the_user() {
    let a = assembled(&passages(1, 3), 4000);
    let text = serde_json::to_string(&a.prompt).unwrap();
    assert!(
        text.contains("From the user's other conversations"),
        "{text}"
    );
    assert!(text.contains("“Conversation 0”"), "{text}");
}
