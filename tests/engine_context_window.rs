//! How many tokens a server's context holds, from its own words (`engine::context_window`): the
//! refusals of each server read, the config fitted to a window, when a refused turn goes again,
//! and the failure a refusal becomes.

use memoire::engine::context_window::{fit, overflow, refit};
use memoire::engine::failure::{classify_http, FailureKind};
use memoire::engine::model::MemoryConfig;

/// What `body` (with `status`) is read as: `None` when it is not a refusal for length, else the
/// window and the prompt's tokens the server said.
fn check(status: u16, body: &str, expected: Option<(Option<u32>, Option<u32>)>) {
    let got = overflow(status, body).map(|o| (o.window, o.prompt_tokens));
    assert_eq!(got, expected, "{status} {body}");
}

/// llama-cpp-python 0.3 at its default `--n_ctx`, a non-streamed request (recorded).
const LLAMA_CPP_PYTHON: &str = r#"{"error":{"message":"This model's maximum context length is 2048 tokens. However, you requested 2919 tokens (2519 in the messages, 400 in the completion). Please reduce the length of the messages or completion.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;

#[test]
fn each_servers_refusal_for_length_is_read() {
    check(400, LLAMA_CPP_PYTHON, Some((Some(2048), Some(2519))));
    // llama-cpp-python when the request set no max_tokens.
    check(
        400,
        r#"{"error":{"message":"This model's maximum context length is 2048 tokens. However, you requested 2519 tokens (2519 in the messages, None in the completion). Please reduce the length of the messages or completion.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
        Some((Some(2048), Some(2519))),
    );
    // OpenAI.
    check(
        400,
        r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130412 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
        Some((Some(128_000), Some(130_412))),
    );
    // vLLM.
    check(
        400,
        r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4500 in the messages, 500 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}"#,
        Some((Some(4096), Some(4500))),
    );
    // llama-server.
    check(
        400,
        r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":4500,"n_ctx":4096}}"#,
        Some((Some(4096), Some(4500))),
    );
    // An older llama-server: the words without the numbers.
    check(
        400,
        r#"{"error":{"code":400,"message":"the request exceeds the available context size. try increasing the context size or enable context shift","type":"invalid_request_error"}}"#,
        Some((None, None)),
    );
    // Anthropic.
    check(
        400,
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208190 tokens > 200000 maximum"}}"#,
        Some((Some(200_000), Some(208_190))),
    );
    // LM Studio.
    check(
        400,
        r#"{"error":"Trying to keep the first 5412 tokens when context the overflows. However, the model is loaded with context length of only 4096 tokens, which is not enough. Try to load the model with a larger context length, or provide a shorter input"}"#,
        Some((Some(4096), Some(5412))),
    );
    // The text of llama-cpp-python's own exception, as a plain body.
    check(
        500,
        "Requested tokens (2531) exceed context window of 2048",
        Some((Some(2048), Some(2531))),
    );
    // Numbers with separators.
    check(
        400,
        r#"{"error":{"message":"This model's maximum context length is 8,192 tokens."}}"#,
        Some((Some(8192), None)),
    );
}

#[test]
fn other_errors_and_nonsense_are_not_refusals_for_length() {
    check(
        400,
        r#"{"error":{"message":"Invalid model","type":"invalid_request_error"}}"#,
        None,
    );
    check(
        401,
        r#"{"error":{"message":"Incorrect API key provided","code":"invalid_api_key"}}"#,
        None,
    );
    check(404, r#"{"detail":"Not Found"}"#, None);
    check(200, LLAMA_CPP_PYTHON, None);
    check(400, "", None);
    check(400, "<html><body>Bad Request</body></html>", None);
    check(400, r#"{"error":null}"#, None);
    // A number that cannot be a context size is not believed, but the refusal still is one.
    check(
        400,
        r#"{"error":{"message":"This model's maximum context length is 12 tokens."}}"#,
        Some((None, None)),
    );
    check(
        400,
        r#"{"error":{"message":"This model's maximum context length is 99999999999999999999 tokens."}}"#,
        Some((None, None)),
    );
    check(
        400,
        r#"{"error":{"type":"exceed_context_size_error","n_ctx":-5,"n_prompt_tokens":"x"}}"#,
        Some((None, None)),
    );
}

fn config(context: u32, reserve: u32) -> MemoryConfig {
    MemoryConfig {
        context_tokens: context,
        reply_reserve_tokens: reserve,
        ..MemoryConfig::default()
    }
}

/// A config of `context`/`reserve` fitted to `window` is `expected` (context, reserve).
fn check_fit(context: u32, reserve: u32, window: u32, expected: (u32, u32)) {
    let f = fit(&config(context, reserve), window);
    assert_eq!((f.context_tokens, f.reply_reserve_tokens), expected);
    assert_eq!(
        f,
        MemoryConfig {
            context_tokens: expected.0,
            reply_reserve_tokens: expected.1,
            ..config(context, reserve)
        },
        "nothing else changes"
    );
}

#[test]
fn a_config_fits_the_window_never_more_than_settings_say() {
    // Settings' 8,192 on llama-cpp-python's 2,048: a twentieth left for the estimate's error.
    check_fit(8192, 1024, 2048, (1946, 973));
    check_fit(8192, 400, 2048, (1946, 400));
    check_fit(8192, 1024, 4096, (3892, 1024));
    // A server that holds more changes nothing.
    check_fit(8192, 1024, 8192 + 8192 / 19, (8192, 1024));
    check_fit(8192, 1024, 128_000, (8192, 1024));
    check_fit(1400, 400, 2048, (1400, 400));
}

#[test]
fn a_refused_turn_goes_again_only_when_the_prompt_gets_smaller() {
    assert!(refit(&config(8192, 1024), 2048, false));
    // Already fitted to that window: a second refusal is an error the user sees.
    assert!(!refit(&fit(&config(8192, 1024), 2048), 2048, false));
    assert!(!refit(&config(2048, 512), 4096, false));
    assert!(refit(&fit(&config(8192, 1024), 4096), 2048, false));
    // A continuation carries the reply so far and does not shrink: never sent again by itself.
    assert!(!refit(&config(8192, 1024), 2048, true));
}

#[test]
fn a_refusal_for_length_is_its_own_failure_with_what_to_do() {
    let f = classify_http(400, None, LLAMA_CPP_PYTHON, false, 0);
    assert_eq!(
        f.kind,
        FailureKind::ContextTooLong {
            window: Some(2048),
            prompt_tokens: Some(2519)
        }
    );
    assert_eq!(
        f.message,
        "The prompt was longer than the server's context of 2,048 tokens (HTTP 400)."
    );
    let fix = f.fix.unwrap();
    assert!(fix.contains("now built for 2,048 tokens"), "{fix}");
    assert!(
        fix.contains("--n_ctx") && fix.contains("--ctx-size"),
        "{fix}"
    );
    assert!(
        fix.contains("maximum context length is 2048"),
        "what the server said: {fix}"
    );
    // Without a number: what to change in Settings.
    let f = classify_http(
        400,
        None,
        r#"{"error":{"message":"context length exceeded"}}"#,
        false,
        0,
    );
    assert_eq!(
        f.kind,
        FailureKind::ContextTooLong {
            window: None,
            prompt_tokens: None
        }
    );
    assert!(f.fix.unwrap().contains("\"Context size\" in Settings"));
    // Other 400s are what they were.
    let f = classify_http(
        400,
        None,
        r#"{"error":{"message":"Invalid model"}}"#,
        false,
        0,
    );
    assert_eq!(f.kind, FailureKind::BadRequest);
}
