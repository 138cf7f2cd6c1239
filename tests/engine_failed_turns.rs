#![cfg(not(target_arch = "wasm32"))]
//! Failed turns (issue 30 items 1 and 7): the words of a failure (one line, the fix apart), what
//! Retry replaces, what a new message after a failed turn replaces, and what goes back to the model
//! of a reply that was stopped, cut off or failed: never two of the user's messages in a row.

use memoire::engine::assemble::{assemble, AssemblyInput, DropReason};
use memoire::engine::decode::StreamError;
use memoire::engine::failure::{
    aborted, classify_http, from_stream_error, network_failure, redirected, split_text, timeout,
    Failure, FailureKind,
};
use memoire::engine::history::{render_message, CUT_OFF_MARKER, STOPPED_MARKER};
use memoire::engine::model::*;
use memoire::engine::tokens::HeuristicEstimator;
use memoire::engine::turn::{failed_turn, retry_plan, RetryPlan};

// ---------- builders ----------

/// A message `m<seq>`: `u` the user's, `a` a complete reply, `f` a reply that failed empty, `p` a
/// reply that failed with text, `s` a stopped reply, `x` one cut off, `e` one stopped empty,
/// `d` a deleted (tombstone) reply.
fn m(seq: u64, kind: char) -> Message {
    let stopped = aborted().message;
    let (role, status, content, error) = match kind {
        'u' => (Role::User, MessageStatus::Complete, "a question", None),
        'a' => (Role::Assistant, MessageStatus::Complete, "an answer", None),
        'f' => (
            Role::Assistant,
            MessageStatus::Error,
            "",
            Some("Can't reach"),
        ),
        'p' => (Role::Assistant, MessageStatus::Error, "half of", Some("x")),
        's' => (
            Role::Assistant,
            MessageStatus::Interrupted,
            "half an",
            Some(stopped.as_str()),
        ),
        'x' => (
            Role::Assistant,
            MessageStatus::Interrupted,
            "half an",
            Some("The connection dropped"),
        ),
        'e' => (
            Role::Assistant,
            MessageStatus::Interrupted,
            "",
            Some(stopped.as_str()),
        ),
        'd' => (Role::Assistant, MessageStatus::Complete, "", None),
        _ => unreachable!(),
    };
    Message {
        id: format!("m{seq}"),
        conversation_id: "c1".into(),
        seq,
        role,
        content: content.to_string(),
        status,
        created_at: seq as i64 * 1000,
        meta: MessageMeta {
            error: error.map(str::to_string),
            deleted: kind == 'd',
            ..Default::default()
        },
    }
}

/// A branch from a pattern: one character per message, seqs from 1.
fn branch(pattern: &str) -> Vec<Message> {
    pattern
        .chars()
        .enumerate()
        .map(|(i, k)| m(i as u64 + 1, k))
        .collect()
}

// ---------- the words of a failure ----------

fn check_words(f: Failure, line_has: &[&str], fix_has: &[&str]) {
    assert!(!f.message.contains('\n'), "one line: {:?}", f.message);
    assert!(f.message.chars().count() <= 120, "short: {:?}", f.message);
    for jargon in [
        "CORS",
        "OLLAMA_ORIGINS",
        "--allowed-origins",
        "The server said",
    ] {
        assert!(
            !f.message.contains(jargon),
            "{jargon} in the line: {:?}",
            f.message
        );
    }
    for needle in line_has {
        assert!(
            f.message.contains(needle),
            "{needle:?} not in {:?}",
            f.message
        );
    }
    let fix = f.fix.clone().unwrap_or_default();
    for needle in fix_has {
        assert!(fix.contains(needle), "{needle:?} not in the fix {fix:?}");
    }
    let text = f.text();
    assert_eq!(split_text(&text), (f.message.as_str(), f.fix.as_deref()));
}

#[test]
fn a_failure_is_one_plain_line_and_the_fix_apart() {
    let net = |u: &str| network_failure(u);
    check_words(
        net("http://127.0.0.1:9/v1"),
        &["Can't reach the server at 127.0.0.1:9. Is it running?"],
        &["CORS", "llama-server"],
    );
    check_words(
        net("http://localhost:11434"),
        &["localhost:11434"],
        &["OLLAMA_ORIGINS"],
    );
    check_words(
        net("https://api.example.com/v1"),
        &["api.example.com"],
        &["Access-Control-Allow-Origin"],
    );
    check_words(
        classify_http(401, None, r#"{"error":{"message":"bad key"}}"#, false, 0),
        &["Check the API key", "401"],
        &["bad key"],
    );
    check_words(
        classify_http(429, Some("7"), "", false, 0),
        &["Try again in 7 seconds"],
        &[],
    );
    check_words(
        classify_http(500, None, "<html><b>boom</b></html>", false, 0),
        &["Server error", "500"],
        &["boom"],
    );
    check_words(
        classify_http(404, None, "", false, 0),
        &["Not Found", "model"],
        &["/v1"],
    );
    check_words(
        timeout(true),
        &["did not start answering"],
        &["loading the model"],
    );
    let err = |code: &str, text: &str| StreamError {
        code: Some(code.into()),
        message: text.into(),
    };
    check_words(
        from_stream_error(&err("stream_malformed", "not SSE"), false),
        &["protocol"],
        &["not SSE"],
    );
    check_words(
        from_stream_error(&err("overloaded_error", "Overloaded"), false),
        &["Server error"],
        &["Overloaded"],
    );
}

#[test]
fn a_redirect_is_refused_and_says_why_and_what_to_do() {
    let f = redirected("http://127.0.0.1:9/v1");
    assert_eq!(f.kind, FailureKind::Redirected);
    assert_eq!(f.status, None);
    check_words(
        f,
        &[
            "answered with a redirect",
            "does not follow it with your key",
            "Use the final address in Settings",
        ],
        &["http://127.0.0.1:9/v1", "https://", "API key"],
    );
    let hostile = redirected("http://h/<script>alert(1)</script>");
    assert!(!hostile.text().contains("<script>"), "{}", hostile.text());
}

#[test]
fn split_text_reads_any_error_text() {
    assert_eq!(split_text("One line."), ("One line.", None));
    assert_eq!(split_text("Line.\nFix it."), ("Line.", Some("Fix it.")));
    assert_eq!(split_text("Line.\n  "), ("Line.", None));
}

// ---------- what Retry and a new message replace ----------

fn check_retry(pattern: &str, expected: Option<(u64, Option<u64>)>) {
    let want = expected.map(|(u, r)| RetryPlan {
        user_id: format!("m{u}"),
        replaces: r.map(|r| format!("m{r}")),
    });
    assert_eq!(retry_plan(&branch(pattern)), want, "retry on {pattern}");
}

#[test]
fn retry_replaces_a_failed_reply_and_keeps_one_that_said_something() {
    check_retry("uauf", Some((3, Some(4))));
    check_retry("uau", Some((3, None)));
    check_retry("uaux", Some((3, None)));
    check_retry("uaus", Some((3, None)));
    check_retry("uaup", Some((3, None)));
    check_retry("uaufd", Some((3, Some(4))));
    check_retry("", None);
    check_retry("a", None);
}

fn check_failed_turn(pattern: &str, expected: Option<u64>) {
    let b = branch(pattern);
    let got = failed_turn(&b).map(|m| m.id.clone());
    assert_eq!(
        got,
        expected.map(|s| format!("m{s}")),
        "failed turn of {pattern}"
    );
}

#[test]
fn a_new_message_after_a_failed_turn_takes_the_failed_question_s_place() {
    check_failed_turn("uauf", Some(3));
    check_failed_turn("uau", Some(3));
    check_failed_turn("uauff", Some(3));
    check_failed_turn("uaufd", Some(3));
    check_failed_turn("uaua", None);
    check_failed_turn("uaux", None);
    check_failed_turn("uaue", None);
    check_failed_turn("uaup", None);
    check_failed_turn("", None);
}

// ---------- what goes back to the model ----------

fn check_wire(kind: char, expected: &str) {
    let (wire, _) = render_message(&m(2, kind), 2000);
    assert_eq!(wire.content, expected, "{kind}");
}

#[test]
fn a_reply_that_did_not_end_goes_back_marked() {
    check_wire('a', "an answer");
    check_wire('s', &format!("half an … {STOPPED_MARKER}"));
    check_wire('x', &format!("half an … {CUT_OFF_MARKER}"));
    check_wire('e', STOPPED_MARKER);
    check_wire('u', "a question");
}

/// What the request carries of `pattern` then a new question: the roles in order ("u"/"a") and the
/// ids left out as unanswered.
fn check_sent(pattern: &str, roles: &str, unanswered: &[u64]) {
    let history = branch(pattern);
    let mut new = m(history.len() as u64 + 1, 'u');
    new.content = "the new question".into();
    let config = MemoryConfig {
        context_tokens: 8000,
        reply_reserve_tokens: 100,
        ..MemoryConfig::default()
    };
    let a = assemble(
        &AssemblyInput {
            system_prompt: "",
            summary: None,
            entities: &[],
            history: &history,
            new_message: &new,
            config: &config,
            protocol: Protocol::OpenAiChat,
            user_facts: &[],
            project: None,
            recall: &[],
        },
        &HeuristicEstimator,
    );
    let got: String = a
        .prompt
        .messages
        .iter()
        .map(|w| if w.role == Role::User { 'u' } else { 'a' })
        .collect();
    assert_eq!(
        got, roles,
        "roles sent for {pattern}: {:?}",
        a.prompt.messages
    );
    let dropped: Vec<String> = a
        .dropped
        .iter()
        .filter(|d| d.reason == DropReason::Unanswered)
        .map(|d| d.message_id.clone())
        .collect();
    let want: Vec<String> = unanswered.iter().map(|s| format!("m{s}")).collect();
    assert_eq!(dropped, want, "unanswered in {pattern}");
    assert!(
        !got.contains("uu"),
        "two user messages in a row for {pattern}"
    );
}

/// A history ending with the user's message and no failed reply: nothing is left out.
fn check_sent_with_pair(pattern: &str) {
    let history = branch(pattern);
    let new = m(history.len() as u64 + 1, 'u');
    let config = MemoryConfig::default();
    let a = assemble(
        &AssemblyInput {
            system_prompt: "",
            summary: None,
            entities: &[],
            history: &history,
            new_message: &new,
            config: &config,
            protocol: Protocol::OpenAiChat,
            user_facts: &[],
            project: None,
            recall: &[],
        },
        &HeuristicEstimator,
    );
    assert!(a.dropped.is_empty(), "{pattern}: {:?}", a.dropped);
}

#[test]
fn the_request_never_carries_two_user_messages_in_a_row() {
    check_sent("ua", "uau", &[]);
    check_sent("uauf", "uau", &[3]);
    // Without a failed reply between (an import's messages), both are the user's words and go.
    check_sent_with_pair("uau");
    check_sent("uaufuf", "uau", &[3, 5]);
    check_sent("uaue", "uauau", &[]);
    check_sent("uaux", "uauau", &[]);
    check_sent("uaup", "uau", &[3]);
}
