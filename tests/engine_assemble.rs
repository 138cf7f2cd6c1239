#![cfg(not(target_arch = "wasm32"))]
//! `engine::assemble`: the prompt's sections in order under the budget, what is dropped and why,
//! the summary shortened, the entities' share, and the transcript format.

use memoire::engine::assemble::{assemble, AssemblyInput, DropReason, SectionKind};
use memoire::engine::history::TRUNCATED_MARKER;
use memoire::engine::model::*;
use memoire::engine::tokens::HeuristicEstimator;

mod chat_builders;
use chat_builders::*;

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
            user_facts: &[],
            project: None,
            recall: &[],
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
fn a_message_hidden_from_the_model_reaches_no_prompt_and_no_memory() {
    // An imported message its source kept out of the prompt (SillyTavern's `is_system`).
    let mut h = history(4, 50);
    h[1].meta.hidden = true;
    let new = msg(5, Role::User, "q");
    let a = run(&h, &new, None, &[], &config(8000, 10));
    assert_eq!(reasons(&a), vec![(2, DropReason::Hidden)]);
    assert_eq!(a.included_message_ids, ids(&["m1", "m3", "m4", "m5"]));
    assert!(!memoire::engine::memory::counts_for_memory(&h[1]));
    assert!(memoire::engine::memory::counts_for_memory(&h[2]));
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
    // Room is held for the user's statements of the uncovered messages history leaves out.
    assert!((3..10).contains(&kept), "kept {kept}");
    assert!(a.section(SectionKind::Pending).is_some());
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

/// A summary too long for what the recent messages leave: shortened to its most telling sentences,
/// beside the entities' share, instead of left out whole.
#[test]
fn assembly_shortens_a_summary_that_does_not_fit_whole() {
    let facts =
        "Ingrid lives in Trondheim. Her cat is called Zorblax. She is allergic to hazelnuts.";
    let filler: String = (0..100)
        .map(|i| format!(" What is the difference between soda {i} and baking powder?"))
        .collect();
    let s = summary(&format!("{facts}{filler}"), 30);
    let h = history(40, 200);
    let new = msg(41, Role::User, "next");
    let a = run(
        &h,
        &new,
        Some(&s),
        &[entity("e", "Ingrid")],
        &config(1100, 4),
    );
    assert_eq!(a.summary_dropped, None);
    assert!(
        a.summary_shortened,
        "{:?} {} {:?}",
        a.summary_dropped,
        a.total_tokens,
        a.sections
            .iter()
            .map(|s| (s.kind, s.tokens))
            .collect::<Vec<_>>()
    );
    let text = &a.section(SectionKind::Summary).unwrap().text;
    for fact in ["Trondheim", "Zorblax", "hazelnuts"] {
        assert!(text.contains(fact), "{fact} in {text}");
    }
    assert!(
        a.section(SectionKind::Entities).is_some(),
        "the entities keep their share"
    );
    assert!(a.total_tokens <= a.budget_tokens);
    // Whole when it fits.
    let a = run(&h, &new, Some(&summary(facts, 30)), &[], &config(1100, 4));
    assert!(!a.summary_shortened && a.summary_dropped.is_none());
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
fn assembly_transcript_format() {
    let h = history(4, 60);
    let new = msg(5, Role::User, "next");
    let mut cfg = config(8000, 10);
    cfg.history_format = HistoryFormat::Transcript;
    let a = run(&h, &new, None, &[], &cfg);
    assert_eq!(a.prompt.messages.len(), 1);
    assert!(a.prompt.messages[0].content.contains("[USER]: message 1"));
    assert!(a.prompt.messages[0].content.ends_with("next"));
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
