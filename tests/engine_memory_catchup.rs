#![cfg(not(target_arch = "wasm32"))]
//! Catching memory up with a history (`engine::memory::catchup`): where chunks end, the plan, each
//! chunk being the request a live update sends, resuming from the stored summary, and which
//! conversations need it.

use memoire::engine::memory::catchup::*;
use memoire::engine::memory::*;
use memoire::engine::model::*;
use proptest::prelude::*;

mod memory_spec;
use memory_spec::{msgs, msgs_from};

// ---------- fixtures ----------

fn covering(covers: u64) -> ConversationSummary {
    ConversationSummary {
        conversation_id: "c1".into(),
        version: 1,
        text: "Earlier facts.".into(),
        covers_up_to_seq: covers,
        message_count: covers,
        updated_at: 1,
    }
}

const WIDE: UpdateLimits = UpdateLimits {
    max_message_chars: 2000,
    max_transcript_chars: 16_000,
    max_entities: 200,
};
/// Two long messages do not fit one transcript.
const NARROW: UpdateLimits = UpdateLimits {
    max_message_chars: 2000,
    max_transcript_chars: 1500,
    max_entities: 200,
};

/// The plan as `(from, to)` pairs.
fn spans(p: &Plan) -> Vec<(u64, u64)> {
    p.chunks.iter().map(|c| (c.from_seq, c.to_seq)).collect()
}

// ---------- where a chunk ends ----------

fn check_end(spec: &str, after: Option<u64>, every: usize, want: u64) {
    assert_eq!(
        chunk_end(&msgs(spec), after, every),
        want,
        "{spec} after {after:?} every {every}"
    );
}

#[test]
fn a_chunk_ends_at_the_reply_closing_the_mth_pair() {
    check_end("uauaua", None, 2, 4);
    check_end("uauaua", None, 1, 2);
    check_end("uauaua", Some(2), 2, 6);
    check_end("uauaua", Some(4), 2, u64::MAX); // one pair left: everything
    check_end("uauaua", None, 0, 2); // 0 is 1
    check_end("yuuaua", None, 2, 6); // system and a second user message open no pair
    check_end("uUeaua", None, 2, 6); // errored and empty messages neither open nor close one
    check_end("aauaua", None, 1, 4); // a reply before any question closes nothing
    check_end("", None, 1, u64::MAX);
}

// ---------- the plan ----------

fn check_plan(
    spec: &str,
    covers: Option<u64>,
    limits: &UpdateLimits,
    every: usize,
    want: &[(u64, u64)],
) {
    assert_eq!(
        spans(&plan(&msgs(spec), covers, limits, every)),
        want,
        "{spec} covers {covers:?} every {every}"
    );
}

#[test]
fn the_plan_cuts_the_uncovered_history_into_live_sized_chunks_in_order() {
    check_plan("uauaua", None, &WIDE, 1, &[(1, 2), (3, 4), (5, 6)]);
    check_plan("uauaua", None, &WIDE, 2, &[(1, 4), (5, 6)]);
    check_plan("uauauau", None, &WIDE, 2, &[(1, 4), (5, 7)]); // the trailing question rides last
    check_plan("uauaua", Some(2), &WIDE, 2, &[(3, 6)]);
    check_plan("uauaua", Some(6), &WIDE, 1, &[]);
    check_plan("", None, &WIDE, 1, &[]);
    check_plan("yuaua", None, &WIDE, 5, &[(2, 5)]); // the system prompt is not summarised
    check_plan("uauasua", None, &WIDE, 1, &[(1, 2), (3, 4)]); // never past a reply being written
    check_plan("uUauea", None, &WIDE, 1, &[(1, 3), (4, 6)]);
    // The size limit cuts a chunk short; the next one starts where it stopped.
    check_plan("LaLaLa", None, &NARROW, 3, &[(1, 2), (3, 4), (5, 6)]);
    check_plan("LLLa", None, &NARROW, 1, &[(1, 1), (2, 2), (3, 4)]);
}

#[test]
fn imported_seqs_from_zero_are_all_covered() {
    let m = msgs_from("yuaua", 0);
    assert_eq!(spans(&plan(&m, None, &WIDE, 1)), [(1, 2), (3, 4)]);
}

#[test]
fn a_plan_counts_the_messages_each_chunk_reads() {
    let p = plan(&msgs("uUauaua"), None, &WIDE, 2);
    let counts: Vec<usize> = p.chunks.iter().map(|c| c.messages).collect();
    assert_eq!(counts, [4, 2]);
}

// ---------- each chunk is a live update ----------

/// Runs a catch-up with a model that always answers with `summary` (and no entities), resuming
/// from `start`: the spans of the requests sent, and the summary at the end.
fn run(
    m: &[Message],
    start: Option<ConversationSummary>,
    limits: &UpdateLimits,
    every: usize,
    summary: Option<&str>,
) -> (Vec<(u64, u64)>, Option<ConversationSummary>) {
    let mut previous = start;
    let mut sent = Vec::new();
    let mut graph = Graph::new(vec![]);
    while let Ok(req) = next_request(previous.as_ref(), m, graph.nodes(), limits, every) {
        sent.push((req.span.from_seq, req.span.to_seq));
        assert!(sent.len() <= m.len(), "a catch-up always moves on");
        let mut parsed = ParsedUpdate {
            summary: summary.map(str::to_string),
            ..Default::default()
        };
        settle(&mut parsed);
        let applied = apply_update(
            &parsed,
            previous.as_ref(),
            "c1",
            &req.span,
            0,
            &mut graph,
            EntityScope::Conversation("c1".into()),
            5,
            10_000,
            || "e".into(),
        );
        previous = applied.summary;
    }
    (sent, previous)
}

#[test]
fn each_chunk_is_the_request_a_live_update_sends_when_its_pairs_are_complete() {
    let m = msgs("uauauauaua");
    let previous = covering(2);
    let entities = vec![];
    let req = next_request(Some(&previous), &m, &entities, &WIDE, 2).unwrap();
    // Live, the update runs once the conversation reaches seq 6 (two pairs after the summary).
    let live = build_update_request(Some(&previous), &m[..6], &entities, &WIDE).unwrap();
    assert_eq!(req, live);
    assert_eq!((req.span.from_seq, req.span.to_seq), (3, 6));
}

#[test]
fn a_run_sends_the_planned_chunks_and_covers_the_whole_history() {
    for (spec, limits, every) in [
        ("uauauau", &WIDE, 2),
        ("LaLaLa", &NARROW, 3),
        ("yuUaeuaua", &WIDE, 1),
    ] {
        let m = msgs(spec);
        let (sent, last) = run(&m, None, limits, every, Some("Facts."));
        assert_eq!(sent, spans(&plan(&m, None, limits, every)), "{spec}");
        assert_eq!(
            last.unwrap().covers_up_to_seq,
            m.last().unwrap().seq,
            "{spec}"
        );
    }
}

#[test]
fn a_reply_without_a_summary_still_moves_the_coverage_on_and_keeps_the_earlier_facts() {
    let m = msgs("uauaua");
    let (sent, last) = run(&m, Some(covering(0)), &WIDE, 1, None);
    assert_eq!(sent, [(1, 2), (3, 4), (5, 6)]);
    let last = last.unwrap();
    assert_eq!(last.covers_up_to_seq, 6);
    assert_eq!(last.text, "Earlier facts.");
}

#[test]
fn a_stopped_run_resumes_where_the_stored_summary_stops_without_redoing_a_chunk() {
    let m = msgs("uauauaua");
    let whole = spans(&plan(&m, None, &WIDE, 1));
    // Stopped after the second chunk: its summary covers seq 4.
    let (rest, _) = run(&m, Some(covering(4)), &WIDE, 1, Some("More."));
    assert_eq!(rest, whole[2..]);
    assert_eq!(spans(&plan(&m, Some(4), &WIDE, 1)), whole[2..]);
}

#[test]
fn settle_gives_a_reply_without_summary_an_empty_one_and_keeps_one_it_has() {
    let mut none = ParsedUpdate::default();
    settle(&mut none);
    assert_eq!(none.summary.as_deref(), Some(""));
    let mut some = ParsedUpdate {
        summary: Some("Ada codes.".into()),
        ..Default::default()
    };
    settle(&mut some);
    assert_eq!(some.summary.as_deref(), Some("Ada codes."));
}

#[test]
fn the_count_a_chunk_records_is_what_it_covers_or_everything_at_the_end() {
    let m = msgs("yuauaU");
    assert_eq!(covered_count(&m, 3, &WIDE, 9), 3);
    assert_eq!(
        covered_count(&m, 5, &WIDE, 9),
        9,
        "only an errored message is left"
    );
}

// ---------- which conversations need it ----------

fn check_imported(id: &str, want: bool) {
    assert_eq!(is_imported(id), want, "{id}");
}

#[test]
fn imported_conversations_are_known_by_their_ids() {
    check_imported("chatgpt-abc", true);
    check_imported("claude-1", true);
    check_imported("sillytavern-h00ff", true);
    check_imported("bigagi-x", true);
    check_imported("c18f3a2b", false);
    check_imported("chatgptabc", false);
    check_imported("chatgpt", false);
}

fn check_needs(message_count: u64, summarised: u64, imported: bool, want: bool) {
    let b = Backlog {
        message_count,
        summarised,
        imported,
        recent_messages: 10,
    };
    assert_eq!(needs_catch_up(b), want, "{b:?}");
}

#[test]
fn a_history_needs_catching_up_when_imported_or_beyond_the_live_window() {
    check_needs(6, 0, true, true);
    check_needs(6, 6, true, false);
    check_needs(0, 0, true, false);
    check_needs(8, 0, false, false); // live updates handle it
    check_needs(11, 0, false, true);
    check_needs(30, 20, false, false);
    check_needs(31, 20, false, true);
}

// ---------- properties ----------

fn spec_strategy() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec!['u', 'a', 'U', 'e', 'y', 'L']),
        0..40,
    )
    .prop_map(|v| v.into_iter().collect())
}

proptest! {
    /// Chunks are in order, never overlap, and together read every message a memory update reads.
    #[test]
    fn chunks_are_ordered_disjoint_and_complete(spec in spec_strategy(), every in 1usize..6, narrow in any::<bool>()) {
        let m = msgs(&spec);
        let limits = if narrow { NARROW } else { WIDE };
        let p = plan(&m, None, &limits, every);
        for w in p.chunks.windows(2) {
            prop_assert!(w[0].to_seq < w[1].from_seq);
        }
        let read: usize = p.chunks.iter().map(|c| c.messages).sum();
        let counting = m.iter().filter(|x| counts_for_memory(x) && x.role != Role::System).count();
        prop_assert_eq!(read, counting);
        let (sent, _) = run(&m, None, &limits, every, Some("S."));
        prop_assert_eq!(sent, spans(&p));
    }
}

/// Runs a build's outcomes (`Ok(updates)` built, `Err(reason)` failed) through a tally and checks
/// whether it gives up, its retry list and its report.
fn check_tally(
    outcomes: &[Result<usize, &str>],
    not_reached: &[&str],
    gives_up: bool,
    report: &str,
) {
    let mut t = BuildTally::default();
    for (i, o) in outcomes.iter().enumerate() {
        match o {
            Ok(n) => t.built(*n),
            Err(reason) => t.failed(BuildFailure {
                conversation_id: format!("c{i}"),
                title: format!("Chat {i}"),
                reason: reason.to_string(),
            }),
        }
    }
    assert_eq!(t.gives_up(), gives_up, "{outcomes:?}");
    let waiting: Vec<String> = not_reached.iter().map(|s| s.to_string()).collect();
    let failed: Vec<String> = outcomes
        .iter()
        .enumerate()
        .filter(|(_, o)| o.is_err())
        .map(|(i, _)| format!("c{i}"))
        .chain(waiting.iter().cloned())
        .collect();
    assert_eq!(t.retry(&waiting), failed);
    assert_eq!(t.report(not_reached.len()), report);
}

#[test]
fn a_build_goes_on_past_a_failure_and_says_which_failed_and_why() {
    check_tally(
        &[Ok(2), Ok(1)],
        &[],
        false,
        "Memory built: 2 conversations up to date, 3 updates written.",
    );
    check_tally(
        &[Ok(2), Err("The reply could not be used."), Ok(1)],
        &[],
        false,
        "Memory built: 2 conversations up to date, 3 updates written. Not built (The reply could not be used): “Chat 1”. What was built is kept; Retry builds only the rest.",
    );
    check_tally(
        &[Err("A"), Err("B"), Err("A"), Ok(0), Err("A"), Err("A")],
        &[],
        false,
        "Memory built: 1 conversation up to date, 0 updates written. Not built (A): “Chat 0”, “Chat 2”, “Chat 4” and 1 more. Not built (B): “Chat 1”. What was built is kept; Retry builds only the rest.",
    );
    // The same failure three times in a row: the rest would fail too.
    check_tally(
        &[Ok(1), Err("Endpoint unreachable."), Err("Endpoint unreachable."), Err("Endpoint unreachable.")],
        &["c9", "c10"],
        true,
        "Memory building stopped: the same failure came 3 times in a row. Memory built: 1 conversation up to date, 1 update written. Not built (Endpoint unreachable): “Chat 1”, “Chat 2”, “Chat 3”. Not reached: 2 conversations. What was built is kept; Retry builds only the rest.",
    );
    check_tally(&[Err("A"), Ok(1), Err("A"), Err("A")], &[], false,
        "Memory built: 1 conversation up to date, 1 update written. Not built (A): “Chat 0”, “Chat 2”, “Chat 3”. What was built is kept; Retry builds only the rest.");
}
