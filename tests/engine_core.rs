#![cfg(not(target_arch = "wasm32"))]
//! Engine core: title, save throttle, history formats, context assembly, the turn state machine,
//! and the seed-004 context-loss scenario.

use memoire::engine::assemble::{assemble, AssemblyInput, DropReason, SectionKind};
use memoire::engine::coalesce::SaveThrottle;
use memoire::engine::decode::{StreamError, StreamEvent};
use memoire::engine::failure::{Failure, FailureKind};
use memoire::engine::history::{
    build_prompt, render_message, ANTHROPIC_LEAD_IN, TRANSCRIPT_CLOSE, TRUNCATED_MARKER,
};
use memoire::engine::model::*;
use memoire::engine::title::{auto_title, auto_title_with, UNTITLED};
use memoire::engine::tokens::HeuristicEstimator;
use memoire::engine::turn::*;
use std::collections::BTreeMap;

// ---------- builders ----------

fn msg(seq: u64, role: Role, content: &str) -> Message {
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

fn with_status(mut m: Message, status: MessageStatus) -> Message {
    m.status = status;
    m
}

fn convo(id: &str) -> Conversation {
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

fn endpoint(protocol: Protocol) -> EndpointProfile {
    EndpointProfile {
        id: "e1".into(),
        base_url: "http://localhost:8080/v1".into(),
        protocol,
        model: "m".into(),
        api_key: None,
        system_prompt: "You are helpful.".into(),
    }
}

fn summary(text: &str, covers: u64) -> ConversationSummary {
    ConversationSummary {
        conversation_id: "c1".into(),
        version: 1,
        text: text.into(),
        covers_up_to_seq: covers,
        message_count: covers,
        updated_at: 0,
    }
}

fn entity(id: &str, name: &str) -> EntityNode {
    EntityNode {
        id: id.into(),
        scope: EntityScope::Conversation("c1".into()),
        entity_type: EntityType::Person,
        name: name.into(),
        aliases: vec![],
        description: format!("{name} is someone the user mentioned."),
        properties: BTreeMap::new(),
        relationships: vec![],
        source_message_ids: vec![],
        updated_at: 0,
    }
}

/// Alternating user/assistant history of `n` messages, seq 1..=n, each `len` chars.
fn history(n: u64, len: usize) -> Vec<Message> {
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

fn config(context_tokens: u32, n: usize) -> MemoryConfig {
    MemoryConfig {
        recent_messages: n,
        context_tokens,
        reply_reserve_tokens: 100,
        ..MemoryConfig::default()
    }
}

// ---------- title ----------

fn check_title(input: &str, expected: &str) {
    assert_eq!(auto_title(input), expected, "title of {input:?}");
    assert!(auto_title(input).chars().count() <= 50);
}

#[test]
fn titles() {
    check_title("Hello there", "Hello there");
    check_title("  many   spaces\n\tand lines  ", "many spaces and lines");
    check_title("", UNTITLED);
    check_title(" \n\t ", UNTITLED);
    check_title(
        "Can you help me plan a three-day trip to Lisbon in early October please?",
        "Can you help me plan a three-day trip to Lisbon…",
    );
    check_title(
        "Summarise: the following document, which is long and dull",
        "Summarise: the following document, which is long…",
    );
    check_title(
        "吾輩は猫である。名前はまだ無い。どこで生れたかとんと見当がつかぬ。何でも薄暗いじめじめした所でニャーニャー泣いていた",
        "吾輩は猫である。名前はまだ無い。どこで生れたかとんと見当がつかぬ…", // after the last 。 in reach
    );
    check_title(
        "这是一个很长的句子，没有空格也没有句号而且一直写下去直到超过五十个字符的限制为止真的很长很长很长还要再写很多很多字才行",
        "这是一个很长的句子，没有空格也没有句号而且一直写下去直到超过五十个字符的限制为止真的很长很长很长还…", // a mark too early to keep half: at the limit
    );
    check_title(&"a".repeat(80), &("a".repeat(49) + "…"));
    check_title(
        "Émile Zola écrivit « J'accuse…! » en 1898 pour défendre Dreyfus",
        "Émile Zola écrivit « J'accuse…! » en 1898 pour…",
    );
    assert_eq!(auto_title_with("one two three", 8), "one two…");
}

// ---------- save throttle ----------

#[test]
fn throttle_saves_at_most_once_per_interval_plus_final() {
    let mut t = SaveThrottle::new(1000);
    assert!(t.on_change(0)); // first change saves at once
    assert!(!t.on_change(200));
    assert!(!t.on_change(999));
    assert_eq!(t.next_deadline(), Some(1000));
    assert!(!t.on_tick(500));
    assert!(t.on_tick(1000));
    assert_eq!(t.next_deadline(), None);
    assert!(!t.on_tick(5000)); // nothing held
    assert!(!t.on_change(1500));
    assert!(t.on_change(2000));
    assert!(t.on_change(1000)); // clock went backwards: save rather than stall
    t.finish(3000);
    assert!(!t.on_change(9000));
    assert_eq!(t.next_deadline(), None);
}

// ---------- history formats ----------

fn wire(role: Role, content: &str) -> WireMessage {
    WireMessage {
        role,
        content: content.into(),
    }
}

fn check_messages(protocol: Protocol, hist: &[WireMessage], expected: &[(Role, &str)]) {
    let p = build_prompt(HistoryFormat::Messages, protocol, "sys".into(), hist, "new");
    assert_eq!(p.system, "sys");
    let got: Vec<(Role, &str)> = p
        .messages
        .iter()
        .map(|m| (m.role, m.content.as_str()))
        .collect();
    assert_eq!(got, expected, "{protocol:?}");
}

#[test]
fn messages_format_per_protocol() {
    use Role::*;
    let h = [
        wire(Assistant, "hi, I am ready"),
        wire(User, "a"),
        wire(User, "b"),
        wire(Tool, "42"),
    ];
    check_messages(
        Protocol::Anthropic,
        &h,
        &[
            (User, ANTHROPIC_LEAD_IN),
            (Assistant, "hi, I am ready"),
            (User, "a\n\nb\n\n[tool result]\n42\n\nnew"),
        ],
    );
    check_messages(
        Protocol::OpenAiChat,
        &h,
        &[
            (Assistant, "hi, I am ready"),
            (User, "a"),
            (User, "b"),
            (User, "[tool result]\n42"),
            (User, "new"),
        ],
    );
    check_messages(
        Protocol::Ollama,
        &[wire(System, "note")],
        &[(System, "note"), (User, "new")],
    );
    check_messages(
        Protocol::Anthropic,
        &[wire(System, "note")],
        &[(User, "[system]\nnote\n\nnew")],
    );
    check_messages(Protocol::Anthropic, &[], &[(User, "new")]);
    check_messages(
        Protocol::Anthropic,
        &[wire(User, "q"), wire(Assistant, "   ")],
        &[(User, "q\n\nnew")],
    );
}

#[test]
fn anthropic_messages_always_alternate_starting_with_user() {
    use Role::*;
    let roles = [User, Assistant, Tool, System];
    // Every history of up to 4 messages over all roles.
    for n in 0..=4u32 {
        for code in 0..4u32.pow(n) {
            let hist: Vec<WireMessage> = (0..n)
                .map(|i| wire(roles[((code / 4u32.pow(i)) % 4) as usize], "x"))
                .collect();
            let p = build_prompt(
                HistoryFormat::Messages,
                Protocol::Anthropic,
                String::new(),
                &hist,
                "new",
            );
            assert_eq!(p.messages[0].role, User);
            assert_eq!(p.messages.last().unwrap().role, User);
            for pair in p.messages.windows(2) {
                assert_ne!(pair[0].role, pair[1].role, "{hist:?}");
            }
        }
    }
}

#[test]
fn transcript_format() {
    let h = [
        wire(Role::User, "my name is Ada"),
        wire(Role::Assistant, "Hello Ada </conversation_history> hi"),
    ];
    let p = build_prompt(
        HistoryFormat::Transcript,
        Protocol::OpenAiChat,
        "sys".into(),
        &h,
        "what is my name?",
    );
    assert_eq!(p.messages.len(), 1);
    let c = &p.messages[0].content;
    assert!(c.starts_with("<conversation_history>\n"));
    assert!(c.contains("context you already know"));
    assert!(c.contains("\n[USER]: my name is Ada\n"));
    assert!(c.contains("\n[ASSISTANT]: Hello Ada"));
    assert_eq!(
        c.matches(TRANSCRIPT_CLOSE).count(),
        1,
        "message text cannot close the block"
    );
    assert!(c.ends_with("</conversation_history>\n\nwhat is my name?"));
    let empty = build_prompt(
        HistoryFormat::Transcript,
        Protocol::Anthropic,
        "s".into(),
        &[],
        "hi",
    );
    assert_eq!(empty.messages, vec![wire(Role::User, "hi")]);
}

fn check_render(m: Message, max: usize, expected: &str, truncated: bool) {
    let (w, t) = render_message(&m, max);
    assert_eq!((w.content.as_str(), t), (expected, truncated));
}

#[test]
fn rendering_truncates_and_reduces_tool_calls() {
    check_render(msg(1, Role::User, "short"), 10, "short", false);
    check_render(msg(1, Role::User, "exactly10!"), 10, "exactly10!", false);
    check_render(
        msg(1, Role::User, "hello world again"),
        11,
        &format!("hello world … {TRUNCATED_MARKER}"),
        true,
    );
    check_render(
        msg(1, Role::User, "日本語のテキスト"),
        3,
        &format!("日本語 … {TRUNCATED_MARKER}"),
        true,
    );
    let mut m = msg(2, Role::Assistant, "Let me look.");
    m.meta.tool_calls = vec![
        ToolCall {
            id: "1".into(),
            name: "search".into(),
            arguments: "{\"q\":\"a very long query\"}".into(),
            result: Some("huge".into()),
        },
        ToolCall {
            id: "2".into(),
            name: "fetch".into(),
            arguments: "{}".into(),
            result: None,
        },
    ];
    check_render(
        m.clone(),
        100,
        "Let me look.\n[called tools: search, fetch]",
        false,
    );
    m.content.clear();
    check_render(m, 100, "[called tools: search, fetch]", false);
}

// ---------- assembly ----------

fn run(
    hist: &[Message],
    new: &Message,
    sum: Option<&ConversationSummary>,
    ents: &[EntityNode],
    cfg: &MemoryConfig,
) -> memoire::engine::assemble::Assembly {
    assemble(
        &AssemblyInput {
            system_prompt: "You are a helpful assistant.",
            summary: sum,
            entities: ents,
            history: hist,
            new_message: new,
            config: cfg,
            protocol: Protocol::OpenAiChat,
        },
        &HeuristicEstimator,
    )
}

fn ids(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn reasons(a: &memoire::engine::assemble::Assembly) -> Vec<(u64, DropReason)> {
    a.dropped.iter().map(|d| (d.seq, d.reason)).collect()
}

#[test]
fn assembly_keeps_everything_that_fits_in_order() {
    let h = history(6, 100);
    let new = msg(7, Role::User, "and now?");
    let a = run(&h, &new, None, &[], &config(8000, 10));
    assert_eq!(
        a.included_message_ids,
        ids(&["m1", "m2", "m3", "m4", "m5", "m6", "m7"])
    );
    assert!(a.dropped.is_empty() && !a.over_budget && !a.history_overflow);
    let kinds: Vec<SectionKind> = a.sections.iter().map(|s| s.kind).collect();
    assert_eq!(
        kinds,
        [
            SectionKind::System,
            SectionKind::History,
            SectionKind::NewMessage
        ]
    );
    let total: u32 = a.sections.iter().map(|s| s.tokens).sum();
    assert_eq!(total, a.total_tokens);
    assert_eq!(a.prompt.messages.len(), 7);
    assert_eq!(a.prompt.messages.last().unwrap().content, "and now?");
    assert_eq!(a.history_through_seq, Some(6));
}

#[test]
fn assembly_order_is_system_summary_entities_history_new() {
    let h = history(30, 100);
    let new = msg(31, Role::User, "next");
    let s = summary("The user is planning a trip.", 20);
    let mut ada = entity("e1", "Ada");
    ada.relationships.push(Relationship {
        target_id: "e2".into(),
        relationship: "knows".into(),
        strength: 0.8,
        valid_from: 0,
        valid_to: None,
    });
    ada.relationships.push(Relationship {
        target_id: "e2".into(),
        relationship: "married to".into(),
        strength: 0.9,
        valid_from: 0,
        valid_to: Some(5),
    });
    ada.properties.insert("city".into(), "London".into());
    let ents = [ada, entity("e2", "Charles")];
    let a = run(&h, &new, Some(&s), &ents, &config(20_000, 10));
    let kinds: Vec<SectionKind> = a.sections.iter().map(|s| s.kind).collect();
    assert_eq!(
        kinds,
        [
            SectionKind::System,
            SectionKind::Summary,
            SectionKind::Entities,
            SectionKind::History,
            SectionKind::NewMessage
        ]
    );
    let sys = &a.prompt.system;
    let (p_sum, p_ent) = (
        sys.find("planning a trip").unwrap(),
        sys.find("- Ada (person)").unwrap(),
    );
    assert!(sys.starts_with("You are a helpful assistant.") && p_sum < p_ent);
    assert!(sys.contains(
        "- Ada (person): Ada is someone the user mentioned. | city=London | knows → Charles (0.80)"
    ));
    assert!(
        !sys.contains("married to"),
        "closed relationships are not live"
    );
    // Covered messages older than the last N are dropped first; the last N stay.
    let expected: Vec<String> = (21..=30)
        .map(|s| format!("m{s}"))
        .chain(["m31".to_string()])
        .collect();
    assert_eq!(a.included_message_ids, expected);
    assert!(a
        .dropped
        .iter()
        .all(|d| d.reason == DropReason::CoveredBySummary && d.seq <= 20));
    assert_eq!(a.dropped.len(), 20);
    assert!(!a.history_overflow);
}

#[test]
fn assembly_last_n_covered_messages_kept_for_recency() {
    let h = history(12, 100);
    let new = msg(13, Role::User, "next");
    let s = summary("Summary of all twelve.", 12);
    let a = run(&h, &new, Some(&s), &[], &config(20_000, 4));
    assert_eq!(
        a.included_message_ids,
        ids(&["m9", "m10", "m11", "m12", "m13"])
    );
    assert_eq!(a.dropped.len(), 8);
}

#[test]
fn assembly_drops_errored_empty_and_the_new_message_copy() {
    let mut h = history(4, 50);
    h[1] = with_status(h[1].clone(), MessageStatus::Error);
    h[2].content = "   ".into();
    h.push(with_status(
        msg(5, Role::Assistant, "partial"),
        MessageStatus::Interrupted,
    ));
    let new = msg(6, Role::User, "q");
    h.push(new.clone()); // the caller may pass the stored new message too
    let a = run(&h, &new, None, &[], &config(8000, 10));
    assert_eq!(
        reasons(&a),
        vec![(2, DropReason::Errored), (3, DropReason::Empty)]
    );
    assert_eq!(a.included_message_ids, ids(&["m1", "m4", "m5", "m6"]));
    assert_eq!(a.history_through_seq, Some(5));
}

#[test]
fn assembly_for_a_retried_message_leaves_out_the_replies_after_it() {
    // Retry after a cut-off or failed reply: the new message is the stored user message m3, and the
    // replies to the earlier attempt (m4 interrupted, m5 errored) come after it.
    let check = |after: Vec<Message>, want_dropped: Vec<(u64, DropReason)>| {
        let mut h = history(2, 50);
        let new = msg(3, Role::User, "the question again");
        h.push(new.clone());
        h.extend(after);
        let a = run(&h, &new, None, &[], &config(8000, 10));
        assert_eq!(a.included_message_ids, ids(&["m1", "m2", "m3"]));
        assert_eq!(reasons(&a), want_dropped);
        let last = a.prompt.messages.last().unwrap();
        assert_eq!(
            (last.role, last.content.as_str()),
            (Role::User, "the question again")
        );
        let before_new = h.iter().rev().find(|m| m.id != new.id).map(|m| m.seq);
        assert_eq!(
            a.history_through_seq, before_new,
            "the turn still sees every stored message"
        );
    };
    let partial = || {
        with_status(
            msg(4, Role::Assistant, "half an ans"),
            MessageStatus::Interrupted,
        )
    };
    let failed = || with_status(msg(5, Role::Assistant, ""), MessageStatus::Error);
    check(vec![partial()], vec![(4, DropReason::AfterNewMessage)]);
    check(
        vec![partial(), failed()],
        vec![
            (4, DropReason::AfterNewMessage),
            (5, DropReason::AfterNewMessage),
        ],
    );
    check(vec![], vec![]);
}

#[test]
fn assembly_over_budget_keeps_newest_contiguous_and_flags_overflow() {
    let h = history(40, 400); // ~100 tokens each
    let new = msg(41, Role::User, "next");
    let a = run(&h, &new, None, &[], &config(700, 10));
    assert!(!a.over_budget);
    assert!(a.total_tokens <= a.budget_tokens);
    assert!(
        a.history_overflow,
        "uncovered history was dropped: memory update due"
    );
    let kept = a.included_message_ids.len() - 1;
    assert!((5..10).contains(&kept), "kept {kept}");
    // Contiguous newest run, everything older dropped for budget.
    let first_kept: u64 = a.included_message_ids[0][1..].parse().unwrap();
    assert_eq!(first_kept, 41 - kept as u64);
    assert!(a
        .dropped
        .iter()
        .all(|d| d.reason == DropReason::OverBudget && d.seq < first_kept));
    assert_eq!(a.dropped.len() + kept, 40);
}

#[test]
fn assembly_mandatory_parts_alone_over_budget_is_reported() {
    let h = history(4, 100);
    let new = msg(5, Role::User, &"word ".repeat(500));
    let a = run(
        &h,
        &new,
        Some(&summary("s", 2)),
        &[entity("e", "E")],
        &config(200, 10),
    );
    assert!(a.over_budget);
    assert_eq!(a.included_message_ids, ids(&["m5"]));
    assert_eq!(a.summary_dropped, Some(DropReason::OverBudget));
    assert_eq!(a.entities_omitted, 1);
    assert_eq!(a.prompt.messages.len(), 1);
}

#[test]
fn assembly_byte_cap() {
    let h = history(20, 1000);
    let new = msg(21, Role::User, "next");
    let mut cfg = config(100_000, 10);
    cfg.max_request_bytes = 6000;
    let a = run(&h, &new, None, &[], &cfg);
    assert!(a.total_bytes <= 6000 && !a.over_byte_cap);
    assert!(a.dropped.iter().any(|d| d.reason == DropReason::ByteCap));
    assert!(a.history_overflow);
}

#[test]
fn assembly_truncates_long_messages_visibly() {
    let h = vec![msg(1, Role::User, &"x".repeat(5000))];
    let new = msg(2, Role::User, "next");
    let a = run(&h, &new, None, &[], &config(8000, 10));
    assert_eq!(a.truncated_message_ids, ids(&["m1"]));
    assert!(a.prompt.messages[0].content.ends_with(TRUNCATED_MARKER));
    assert!(a.prompt.messages[0].content.chars().count() < 2100);
}

#[test]
fn assembly_entities_keep_their_share_while_history_needs_the_room() {
    let ents: Vec<EntityNode> = (0..200)
        .map(|i| entity(&format!("e{i}"), &format!("Person{i}")))
        .collect();
    let h = history(40, 400); // far more than the budget, none of it covered
    let new = msg(41, Role::User, "hi");
    let cfg = config(2100, 10); // budget 2000, share 300
    let a = run(&h, &new, None, &ents, &cfg);
    let sec = a.section(SectionKind::Entities).unwrap();
    // the share, plus at most the gap the next history message (about 105 tokens) did not fit in
    assert!(sec.tokens <= 300 + 105, "{}", sec.tokens);
    assert!(a.total_tokens <= 2000 && a.history_overflow);
    assert!(a.entities_omitted > 0 && sec.entity_ids.len() + a.entities_omitted == 200);
    assert_eq!(sec.entity_ids[..2], ids(&["e0", "e1"]));
}

#[test]
fn assembly_entities_take_what_history_leaves() {
    let ents: Vec<EntityNode> = (0..200)
        .map(|i| entity(&format!("e{i}"), &format!("Person{i}")))
        .collect();
    let new = msg(1, Role::User, "hi");
    let cfg = config(2100, 10); // budget 2000, share 300, no history at all
    let a = run(&[], &new, None, &ents, &cfg);
    let sec = a.section(SectionKind::Entities).unwrap();
    assert!(
        sec.tokens > 300 && a.total_tokens <= 2000,
        "{} {}",
        sec.tokens,
        a.total_tokens
    );
    assert_eq!(sec.entity_ids.len() + a.entities_omitted, 200);
    // still in rank order, the share's entities first
    let want: Vec<String> = (0..sec.entity_ids.len()).map(|i| format!("e{i}")).collect();
    assert_eq!(sec.entity_ids, want);
}

#[test]
fn assembly_one_wordy_entity_cannot_crowd_out_the_others() {
    // A small model wrote paragraphs into the first entity: its line is cut (name first), and the
    // names after it still fit the share.
    let mut wordy = entity("e0", "Ingrid Valcourt");
    wordy.description = "She talked about many things at length. ".repeat(40);
    let ents = vec![wordy, entity("e1", "Zorblax"), entity("e2", "Trondheim")];
    let new = msg(1, Role::User, "hi");
    let cfg = config(1100, 10); // budget 1000, share 150
    let a = run(&[], &new, None, &ents, &cfg);
    let sec = a.section(SectionKind::Entities).unwrap();
    assert_eq!(sec.entity_ids, ids(&["e0", "e1", "e2"]));
    assert!(sec.tokens <= 150, "{}", sec.tokens);
    assert!(
        sec.text.contains("Ingrid Valcourt (person): She talked"),
        "{}",
        sec.text
    );
}
