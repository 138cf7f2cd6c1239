#![cfg(not(target_arch = "wasm32"))]
//! `engine::failure`: the words of a failure (one line, the fix apart), a redirect refused, and
//! reading any error text back.

use memoire::engine::decode::StreamError;
use memoire::engine::failure::{
    classify_http, from_stream_error, network_failure, redirected, split_text, timeout, Failure,
    FailureKind,
};

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
