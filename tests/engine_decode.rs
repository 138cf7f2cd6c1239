#![cfg(not(target_arch = "wasm32"))]
//! Stream decoders: every fixture decoded whole, split at every byte offset, in 1-byte chunks, with
//! CRLF and CR line endings, and cut off at every byte; hand-written edge cases; property tests.

use memoire::engine::decode::{
    decode_all, decoder_for, StreamError, StreamEvent, Timings, CODE_CUT_OFF, CODE_MALFORMED,
};
use memoire::engine::model::{Protocol, Usage};
use proptest::prelude::*;

use Protocol::{Anthropic, Ollama, OpenAiChat, OpenAiResponses};

// ---- helpers ----------------------------------------------------------------------------------

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Feeds the chunks in order, polling between chunks, then ends the body.
fn decode_chunks<'a>(
    protocol: Protocol,
    chunks: impl IntoIterator<Item = &'a [u8]>,
) -> Vec<StreamEvent> {
    let mut decoder = decoder_for(protocol);
    let mut events = Vec::new();
    for chunk in chunks {
        decoder.handle_bytes(chunk);
        while let Some(e) = decoder.poll_event() {
            events.push(e);
        }
    }
    decoder.handle_eof();
    while let Some(e) = decoder.poll_event() {
        events.push(e);
    }
    events
}

fn text(s: &str) -> StreamEvent {
    StreamEvent::TextDelta(s.to_string())
}
fn reason(s: &str) -> StreamEvent {
    StreamEvent::ReasoningDelta(s.to_string())
}
fn reasons(parts: &[&str]) -> Vec<StreamEvent> {
    parts.iter().map(|p| reason(p)).collect()
}
fn texts(parts: &[&str]) -> Vec<StreamEvent> {
    parts.iter().map(|p| text(p)).collect()
}
fn tool(index: u32, id: Option<&str>, name: Option<&str>, arguments: &str) -> StreamEvent {
    StreamEvent::ToolCallDelta {
        index,
        id: id.map(str::to_string),
        name: name.map(str::to_string),
        arguments: arguments.to_string(),
    }
}
fn args(index: u32, arguments: &str) -> StreamEvent {
    tool(index, None, None, arguments)
}
fn usage(prompt_tokens: u32, completion_tokens: u32) -> StreamEvent {
    StreamEvent::Usage(Usage {
        prompt_tokens,
        completion_tokens,
    })
}
/// Ollama's figures from its last line: counts and durations in ns.
fn ollama_timings(eval_count: u32, eval_ns: u64, prompt_ns: u64, load_ns: u64) -> StreamEvent {
    StreamEvent::Timings(Timings {
        tokens: Some(eval_count),
        first_token_ms: Some((prompt_ns + load_ns) as f64 / 1e6),
        tokens_per_s: Some(f64::from(eval_count) * 1e9 / eval_ns as f64),
    })
}
fn cached(n: u32) -> StreamEvent {
    StreamEvent::CachedTokens(n)
}
fn done(reason: Option<&str>) -> StreamEvent {
    StreamEvent::Done {
        finish_reason: reason.map(str::to_string),
    }
}
fn err(code: Option<&str>, message: &str) -> StreamEvent {
    StreamEvent::Error(StreamError {
        code: code.map(str::to_string),
        message: message.to_string(),
    })
}
fn response_id(id: &str) -> StreamEvent {
    StreamEvent::ResponseId(id.to_string())
}

fn is_terminal(e: &StreamEvent) -> bool {
    matches!(e, StreamEvent::Done { .. } | StreamEvent::Error(_))
}

fn error_code(e: &StreamEvent) -> Option<&str> {
    match e {
        StreamEvent::Error(StreamError { code, .. }) => code.as_deref(),
        _ => None,
    }
}

/// Exactly one terminal event, and it comes last.
fn assert_shape(events: &[StreamEvent], what: &str) {
    let terminals = events.iter().filter(|e| is_terminal(e)).count();
    assert_eq!(terminals, 1, "{what}: one Done or Error, got {events:?}");
    assert!(
        is_terminal(events.last().unwrap()),
        "{what}: terminal event last"
    );
}

fn with_endings(bytes: &[u8], ending: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() * 2);
    for &b in bytes {
        if b == b'\n' {
            out.extend_from_slice(ending);
        } else {
            out.push(b);
        }
    }
    out
}

/// Same events whole, at every two-way split, in 1-byte chunks and in 7-byte chunks.
fn assert_chunking_invariant(
    protocol: Protocol,
    bytes: &[u8],
    expected: &[StreamEvent],
    what: &str,
) {
    assert_eq!(decode_chunks(protocol, [bytes]), expected, "{what}: whole");
    for i in 0..=bytes.len() {
        let (a, b) = bytes.split_at(i);
        assert_eq!(
            decode_chunks(protocol, [a, b]),
            expected,
            "{what}: split at {i}"
        );
    }
    assert_eq!(
        decode_chunks(protocol, bytes.chunks(1)),
        expected,
        "{what}: 1-byte chunks"
    );
    assert_eq!(
        decode_chunks(protocol, bytes.chunks(7)),
        expected,
        "{what}: 7-byte chunks"
    );
}

/// Every strict prefix of the body: the events so far, then exactly one error (cut off, or the
/// stream's own error), unless the terminator was already complete.
fn assert_truncations(protocol: Protocol, bytes: &[u8], full: &[StreamEvent], what: &str) {
    for i in 0..bytes.len() {
        let events = decode_chunks(protocol, [&bytes[..i]]);
        if events == full {
            continue;
        }
        let (last, before) = events.split_last().expect("an event");
        assert!(
            (full.starts_with(before) || text_prefix(before, full))
                && !before.iter().any(is_terminal),
            "{what}: prefix {i} gave {events:?}"
        );
        let own_error = full.last() == Some(last) && matches!(last, StreamEvent::Error(_));
        assert!(
            error_code(last) == Some(CODE_CUT_OFF) || own_error,
            "{what}: prefix {i} must end in a cut-off error, got {last:?}"
        );
    }
}

/// `before` says what `full` says so far, its deltas maybe cut differently (a cut-off stream gives
/// out the text the `<think>` split was holding, up to a `</think>` cut short).
fn text_prefix(before: &[StreamEvent], full: &[StreamEvent]) -> bool {
    let is_delta = |e: &&StreamEvent| {
        matches!(
            e,
            StreamEvent::TextDelta(_) | StreamEvent::ReasoningDelta(_)
        )
    };
    let others = |v: &[StreamEvent]| -> Vec<StreamEvent> {
        v.iter().filter(|e| !is_delta(e)).cloned().collect()
    };
    let (mut r, t) = reasoning_and_text(before);
    if let Some(n) = (1..8).rev().find(|&n| r.ends_with(&"</think>"[..n])) {
        r.truncate(r.len() - n);
    }
    let (full_r, full_t) = reasoning_and_text(full);
    full_r.starts_with(&r) && full_t.starts_with(&t) && others(full).starts_with(&others(before))
}

/// The whole battery for one fixture.
fn check_fixture(name: &str, protocol: Protocol, expected: Vec<StreamEvent>) {
    let bytes = fixture(name);
    assert_shape(&expected, name);
    assert_chunking_invariant(protocol, &bytes, &expected, name);
    // Other line endings: 1-byte chunks already put a boundary everywhere (CR | LF included).
    for (ending, label) in [(&b"\r\n"[..], "CRLF"), (&b"\r"[..], "CR")] {
        let variant = with_endings(&bytes, ending);
        for size in [1, 2, 3, variant.len().max(1)] {
            let events = decode_chunks(protocol, variant.chunks(size));
            assert_eq!(events, expected, "{name} {label} in {size}-byte chunks");
        }
    }
    assert_truncations(protocol, &bytes, &expected, name);
}

// ---- fixtures ---------------------------------------------------------------------------------

#[test]
fn openai_chat_real_llamacpp_recording() {
    let mut expected = texts(&[
        "Hello",
        ",",
        " welcome",
        " to",
        " my",
        " language",
        " learning",
        " platform",
        "!",
        " I",
        "'m",
        " here",
        " to",
        " help",
        " you",
        " with",
        " your",
        " language",
        " skills",
        ".",
        " Here",
        " are",
        " three",
        " languages",
        ":",
        "\n\n",
        "1",
        ".",
        " English",
        "\n",
        "2",
        ".",
        " Spanish",
        "\n",
        "3",
        ".",
        " French",
    ]);
    expected.push(done(Some("stop")));
    check_fixture("openai-chat-llamacpp-python.sse", OpenAiChat, expected);
}

#[test]
fn openai_chat_tool_calls_and_usage() {
    check_fixture(
        "openai-chat-tool-call.sse",
        OpenAiChat,
        vec![
            tool(0, Some("call_Xk3vQ9"), Some("get_weather"), ""),
            args(0, "{\"ci"),
            args(0, "ty\": \"Pa"),
            args(0, "ris\"}"),
            tool(1, Some("call_Lm7pR2"), Some("get_weather"), ""),
            args(1, "{\"ci"),
            args(1, "ty\": \"Tōkyō\"}"),
            usage(82, 36),
            cached(0),
            done(Some("tool_calls")),
        ],
    );
}

/// llama.cpp's and vLLM's way: the text, then several calls whole in one delta.
#[test]
fn openai_chat_parallel_tool_calls_in_one_delta() {
    check_fixture(
        "openai-chat-parallel-tool-calls.sse",
        OpenAiChat,
        vec![
            text("I'll look both up."),
            tool(
                0,
                Some("call_8fQ2"),
                Some("echo"),
                r#"{"message":"Grüße 👋"}"#,
            ),
            tool(1, Some("call_9hR3"), Some("add"), r#"{"a":2,"b":3}"#),
            done(Some("tool_calls")),
        ],
    );
}

#[test]
fn openai_chat_unicode_comments_and_usage() {
    let mut expected = texts(&[
        "Grüße",
        " aus Köln",
        " 👋🏽",
        " — 日本語",
        "も大丈夫",
        "!",
        " Ça va 😀 ?",
    ]);
    expected.extend([usage(19, 14), done(Some("stop"))]);
    check_fixture("openai-chat-unicode.sse", OpenAiChat, expected);
}

#[test]
fn openai_chat_in_stream_error() {
    check_fixture(
        "openai-chat-error.sse",
        OpenAiChat,
        vec![
            text("The answer"),
            text(" is"),
            err(
                Some("server_error"),
                "The server had an error while processing your request. Sorry about that!",
            ),
        ],
    );
}

const RESP_ID: &str = "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b";

#[test]
fn openai_responses_text() {
    let mut expected = vec![response_id(RESP_ID)];
    expected.extend(texts(&[
        "Bonjour",
        " ! Ça",
        " va ?",
        " 🙂 ",
        "Mémoire",
        " n’oublie",
        " rien.",
    ]));
    expected.extend([usage(37, 17), cached(0), done(Some("completed"))]);
    check_fixture("openai-responses-text.sse", OpenAiResponses, expected);
}

#[test]
fn openai_responses_tool_call() {
    check_fixture(
        "openai-responses-tool-call.sse",
        OpenAiResponses,
        vec![
            response_id(RESP_ID),
            tool(
                0,
                Some("call_unLAR8MvFNptuiZK6K6HCy5k"),
                Some("get_current_weather"),
                "",
            ),
            args(0, "{\""),
            args(0, "location"),
            args(0, "\":\""),
            args(0, "São Paulo"),
            args(0, "\",\"unit\":\"celsius\"}"),
            usage(291, 23),
            cached(0),
            done(Some("completed")),
        ],
    );
}

/// Text, then two `function_call` items, each with its `call_id`, grouped by `output_index`.
#[test]
fn openai_responses_parallel_function_calls() {
    check_fixture(
        "openai-responses-parallel-tool-calls.sse",
        OpenAiResponses,
        vec![
            response_id("resp_par_01"),
            text("Checking both."),
            tool(1, Some("call_Echo1"), Some("echo"), ""),
            args(1, "{\"message\":"),
            args(1, "\"Tōkyō\"}"),
            tool(2, Some("call_Add2"), Some("add"), ""),
            args(2, r#"{"a":2,"b":3}"#),
            usage(120, 41),
            cached(64),
            done(Some("completed")),
        ],
    );
}

#[test]
fn openai_responses_previous_response_not_found() {
    check_fixture(
        "openai-responses-not-found.sse",
        OpenAiResponses,
        vec![err(
            Some("previous_response_not_found"),
            "Previous response with id 'resp_0d5f2c1e9a8b7c6d5e4f3a2b1c0d9e8f' not found.",
        )],
    );
}

#[test]
fn openai_responses_failed() {
    check_fixture(
        "openai-responses-failed.sse",
        OpenAiResponses,
        vec![
            response_id(RESP_ID),
            err(
                Some("server_error"),
                "The model failed to generate a response.",
            ),
        ],
    );
}

#[test]
fn openai_responses_incomplete_is_done_with_reason() {
    check_fixture(
        "openai-responses-incomplete.sse",
        OpenAiResponses,
        vec![
            response_id(RESP_ID),
            text("Once upon"),
            text(" a time"),
            usage(12, 4),
            done(Some("max_output_tokens")),
        ],
    );
}

#[test]
fn ollama_chat_text_and_usage() {
    let mut expected = texts(&[
        "Ciao", "!", " Ich", " heiße", " Llama", " 🦙", " & ", "<b>", "日本", "</b>",
    ]);
    expected.extend([
        ollama_timings(282, 4_535_599_000, 342_546_000, 1_334_875),
        usage(26, 282),
        done(Some("stop")),
    ]);
    check_fixture("ollama-chat.ndjson", Ollama, expected);
}

#[test]
fn ollama_tool_calls() {
    check_fixture(
        "ollama-tool-call.ndjson",
        Ollama,
        vec![
            tool(
                0,
                None,
                Some("get_weather"),
                r#"{"city":"Zürich","unit":"celsius"}"#,
            ),
            tool(1, None, Some("get_time"), r#"{"timezone":"Europe/Zurich"}"#),
            ollama_timings(33, 552_222_000, 328_493_000, 3_753_500),
            usage(122, 33),
            done(Some("stop")),
        ],
    );
}

/// Text, then two calls without ids in one message: numbered in stream order.
#[test]
fn ollama_tool_calls_after_text_without_ids() {
    check_fixture(
        "ollama-tool-calls-with-text.ndjson",
        Ollama,
        vec![
            text("Let me check."),
            tool(0, None, Some("echo"), r#"{"message":"日本語"}"#),
            tool(1, None, Some("add"), r#"{"a":2,"b":3}"#),
            ollama_timings(40, 800_000_000, 300_000_000, 2_000_000),
            usage(140, 40),
            done(Some("stop")),
        ],
    );
}

#[test]
fn ollama_error_line() {
    check_fixture(
        "ollama-error.ndjson",
        Ollama,
        vec![
            text("The"),
            text(" sky"),
            err(
                None,
                "an error was encountered while running the model: unexpected EOF",
            ),
        ],
    );
}

#[test]
fn anthropic_text_with_ping_and_emoji() {
    let mut expected = texts(&["Hej", "! Smörgåsbord", " 🥪", " und Grüße", " 😀"]);
    expected.extend([usage(25, 15), cached(0), done(Some("end_turn"))]);
    check_fixture("anthropic-text.sse", Anthropic, expected);
}

#[test]
fn anthropic_tool_use() {
    let mut expected = texts(&[
        "Okay",
        ",",
        " let",
        "'s check the weather for San Francisco, CA:",
    ]);
    expected.extend([
        tool(
            1,
            Some("toolu_01T1x1fJ34qAmk2tNTrN7Up6"),
            Some("get_weather"),
            "",
        ),
        args(1, ""),
        args(1, "{\"location\":"),
        args(1, " \"San Fra"),
        args(1, "ncisco, CA\""),
        args(1, ", \"unit\": \"fah"),
        args(1, "renheit\"}"),
        usage(472, 89),
        cached(0),
        done(Some("tool_use")),
    ]);
    check_fixture("anthropic-tool-use.sse", Anthropic, expected);
}

/// Two `tool_use` blocks, each with its id, their `input_json_delta` pieces grouped by block.
#[test]
fn anthropic_parallel_tool_use() {
    check_fixture(
        "anthropic-parallel-tool-use.sse",
        Anthropic,
        vec![
            tool(0, Some("toolu_01Echo"), Some("echo"), ""),
            args(0, "{\"message\": \"Smörgås"),
            args(0, "bord 🥪\"}"),
            tool(1, Some("toolu_02Add"), Some("add"), ""),
            args(1, r#"{"a": 2, "b": 3}"#),
            usage(310 + 128, 57), // the prompt counts what was read from the cache
            cached(128),
            done(Some("tool_use")),
        ],
    );
}

#[test]
fn anthropic_error_event() {
    check_fixture(
        "anthropic-error.sse",
        Anthropic,
        vec![
            text("Let me think"),
            err(Some("overloaded_error"), "Overloaded"),
        ],
    );
}

// ---- reasoning: every protocol's own form, each fixture split at every byte -------------------

#[test]
fn openai_chat_deepseek_reasoning_content() {
    let mut expected = reasons(&[
        "Okay",
        ",",
        " the user",
        " asks",
        " for",
        " 2",
        "+",
        "2",
        ".",
        " That",
        "'s",
        " 4",
        ".",
    ]);
    expected.extend(texts(&["2", " +", " 2", " =", " **4**", "."]));
    expected.extend([usage(12, 31), cached(0), done(Some("stop"))]);
    check_fixture("openai-chat-deepseek-reasoning.sse", OpenAiChat, expected);
}

#[test]
fn openai_chat_llamacpp_reasoning_content() {
    let mut expected = reasons(&[
        "Okay", ",", " the", " user", " greets", " me", " in", " French", ".",
    ]);
    expected.extend(texts(&[
        "Bonjour", " !", " Ça", " va", " très", " bien", ".",
    ]));
    // llama.cpp's `timings` in its final chunk, as it reported them.
    let timings = StreamEvent::Timings(Timings {
        tokens: Some(18),
        first_token_ms: Some(41.235),
        tokens_per_s: Some(99.8158951267706),
    });
    expected.extend([usage(14, 18), timings, done(Some("stop"))]);
    check_fixture("openai-chat-llamacpp-reasoning.sse", OpenAiChat, expected);
}

#[test]
fn openai_chat_openrouter_reasoning_field() {
    let mut expected = reasons(&["The user wants", " a haiku", " about 🌧️ rain."]);
    expected.extend(texts(&[
        "Soft rain on the roof",
        "\nGrüße from the grey sky",
        "\nPuddles hold the light",
    ]));
    expected.extend([usage(17, 40), done(Some("stop"))]);
    check_fixture("openai-chat-openrouter-reasoning.sse", OpenAiChat, expected);
}

#[test]
fn openai_chat_think_tags_at_the_start_of_the_content() {
    // A `<` is held until it cannot be the start of `</think>`.
    let mut expected = reasons(&[
        "\n", "Okay", ",", " 3", " ", "< 5", " is", " true", ".", " ",
    ]);
    expected.extend(texts(&["Yes", ",", " 3", " <", " 5", "."]));
    expected.extend([usage(15, 18), done(Some("stop"))]);
    check_fixture("openai-chat-think-tags.sse", OpenAiChat, expected);
}

#[test]
fn ollama_thinking() {
    let mut expected = reasons(&[
        "Okay",
        ",",
        " the",
        " user",
        " asks",
        " how",
        " many",
        " r",
        "'s",
        " in",
        " \"strawberry\"",
        ".",
        " Three",
        ".",
    ]);
    expected.extend(texts(&[
        "There",
        " are",
        " **3**",
        " r",
        "'s",
        " in",
        " \"strawberry\"",
        ".",
    ]));
    expected.extend([
        ollama_timings(30, 942_184_709, 61_516_708, 37_204_125),
        usage(18, 30),
        done(Some("stop")),
    ]);
    check_fixture("ollama-thinking.ndjson", Ollama, expected);
}

#[test]
fn anthropic_thinking_blocks_without_the_signature() {
    let mut expected = reasons(&[
        "Let me solve this step by step:\n\n1. First break down 27 * 453",
        "\n2. 453 = 400 + 50 + 3",
        "\n3. 27 * 400 = 10,800 ✓",
    ]);
    expected.extend(texts(&["27 * 453 = ", "**12,231**"]));
    expected.extend([usage(46, 112), cached(0), done(Some("end_turn"))]);
    check_fixture("anthropic-thinking.sse", Anthropic, expected);
}

#[test]
fn openai_responses_reasoning_summary() {
    let mut expected = vec![response_id(
        "resp_6820f382ee1c8191bc096bee70894d040ac5ba57aafcbac7",
    )];
    expected.extend(reasons(&[
        "**Answering a simple question**\n\n",
        "The user asks",
        " what 2+2 is.",
        "\n\n",
        "**Giving the answer**\n\n",
        "It is 4; I",
        "'ll say so.",
    ]));
    expected.extend(texts(&["2 + 2", " = **4**", "."]));
    expected.extend([usage(13, 148), cached(0), done(Some("completed"))]);
    check_fixture("openai-responses-reasoning.sse", OpenAiResponses, expected);
}

/// The reasoning and the text of `events`, each concatenated.
fn reasoning_and_text(events: &[StreamEvent]) -> (String, String) {
    let (mut reasoning, mut content) = (String::new(), String::new());
    for e in events {
        match e {
            StreamEvent::ReasoningDelta(t) => reasoning.push_str(t),
            StreamEvent::TextDelta(t) => content.push_str(t),
            _ => {}
        }
    }
    (reasoning, content)
}

/// `reply` streamed as text deltas cut at every char boundary (two pieces), one char a delta, and
/// whole, on every protocol, each body also split at every byte: always `reasoning` and `content`.
fn check_think(reply: &str, reasoning: &str, content: &str) {
    let bounds: Vec<usize> = (0..=reply.len())
        .filter(|&i| reply.is_char_boundary(i))
        .collect();
    let mut cuts: Vec<Vec<String>> = bounds
        .iter()
        .map(|&i| vec![reply[..i].to_string(), reply[i..].to_string()])
        .collect();
    cuts.push(reply.chars().map(String::from).collect());
    for protocol in Protocol::ALL {
        for parts in &cuts {
            let body = stream_of(protocol, parts, "\n");
            let events = decode_all(protocol, body.as_bytes());
            assert!(matches!(events.last(), Some(StreamEvent::Done { .. })));
            let got = reasoning_and_text(&events);
            assert_eq!(
                got,
                (reasoning.into(), content.into()),
                "{protocol:?} {parts:?}"
            );
        }
        let body = stream_of(protocol, &[reply.to_string()], "\n");
        for i in 0..=body.len() {
            let (a, b) = body.as_bytes().split_at(i);
            let got = reasoning_and_text(&decode_chunks(protocol, [a, b]));
            assert_eq!(
                got,
                (reasoning.into(), content.into()),
                "{protocol:?} byte {i}"
            );
        }
    }
}

#[test]
fn think_tags_only_at_the_start_at_any_split() {
    let plain = "No thinking here: <think>is text</think> in the middle.";
    check_think(plain, "", plain);
    check_think("Hello", "", "Hello");
    check_think("  <thinking>x</thinking>", "", "  <thinking>x</thinking>");
    check_think("<thin", "", "<thin");
    check_think("", "", "");
    check_think("<think>Why? 🤔</think>\n\nBecause.", "Why? 🤔", "Because.");
    check_think(
        "\n<think>a < b </thin k></think>ok",
        "a < b </thin k>",
        "ok",
    );
    check_think(
        "<think>unclosed, all reasoning </thi",
        "unclosed, all reasoning </thi",
        "",
    );
    check_think("<think></think>Just the answer", "", "Just the answer");
    check_think("<think>x</think>a </think> b", "x", "a </think> b");
}

// ---- edge cases -------------------------------------------------------------------------------

/// Decodes `body` whole and in 1-byte chunks (both must agree) and compares with `expected`.
fn check(protocol: Protocol, body: &str, expected: &[StreamEvent]) {
    let bytes = body.as_bytes();
    let whole = decode_all(protocol, bytes);
    assert_eq!(whole, expected, "body: {body:?}");
    assert_eq!(
        decode_chunks(protocol, bytes.chunks(1)),
        expected,
        "1-byte: {body:?}"
    );
}

/// The decoded events end in one error with `code` whose message contains `needle`.
fn check_error(protocol: Protocol, body: &[u8], code: Option<&str>, needle: &str) {
    for events in [
        decode_all(protocol, body),
        decode_chunks(protocol, body.chunks(1)),
    ] {
        assert_shape(&events, "error case");
        match events.last() {
            Some(StreamEvent::Error(e)) => {
                assert_eq!(e.code.as_deref(), code, "{events:?}");
                assert!(
                    e.message.contains(needle),
                    "{:?} lacks {needle:?}",
                    e.message
                );
            }
            other => panic!("expected an error, got {other:?}"),
        }
    }
}

const CHAT_HI: &str = r#"{"choices":[{"index":0,"delta":{"content":"hi"}}]}"#;

#[test]
fn sse_rules() {
    let hi_done = [text("hi"), done(None)];
    let cases: &[(&str, &[StreamEvent])] = &[
        // no space after the colon, and id/retry fields, and comments
        (&format!("data:{CHAT_HI}\n\ndata:[DONE]\n\n"), &hi_done),
        (&format!(": hello\nid: 7\nretry: 1000\ndata: {CHAT_HI}\n\n: bye\ndata: [DONE]\n\n"), &hi_done),
        // multi-line data is joined with \n before the JSON is read
        ("data: {\"choices\":[{\"index\":0,\ndata: \"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n", &hi_done),
        // a leading byte-order mark
        (&format!("\u{feff}data: {CHAT_HI}\n\ndata: [DONE]\n\n"), &hi_done),
        // a last event without its blank line (or without its newline) still counts
        (&format!("data: {CHAT_HI}\n\ndata: [DONE]\n"), &hi_done),
        (&format!("data: {CHAT_HI}\n\ndata: [DONE]"), &hi_done),
        // anything after [DONE] is ignored: Done exactly once
        (&format!("data: {CHAT_HI}\n\ndata: [DONE]\n\ndata: [DONE]\n\ndata: {{bad\n\n"), &hi_done),
        // choices other than 0, null usage, empty deltas
        (r#"data: {"choices":[{"index":1,"delta":{"content":"no"}}],"usage":null}

data: {"choices":[{"index":0,"delta":{}}]}

data: [DONE]

"#, &[done(None)]),
        // usage chunk with empty choices
        ("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":6,\"total_tokens\":11}}\n\ndata: [DONE]\n\n", &[usage(5, 6), done(None)]),
    ];
    for (body, expected) in cases {
        check(OpenAiChat, body, expected);
    }
}

#[test]
fn openai_chat_error_forms() {
    // llama.cpp's server: an `error:` field line
    let llama = format!("data: {CHAT_HI}\n\nerror: {{\"code\":400,\"message\":\"the request exceeds the available context size\",\"type\":\"exceed_context_size_error\"}}\n\n");
    check_error(
        OpenAiChat,
        llama.as_bytes(),
        Some("400"),
        "exceeds the available context",
    );
    assert_eq!(decode_all(OpenAiChat, llama.as_bytes())[0], text("hi"));
    for protocol in [OpenAiResponses, Anthropic] {
        check_error(
            protocol,
            b"error: {\"message\":\"boom\",\"code\":\"x\"}\n\n",
            Some("x"),
            "boom",
        );
    }
    // `event: error` (vLLM-style) and numeric codes
    check_error(
        OpenAiChat,
        b"event: error\ndata: {\"error\":{\"message\":\"boom\",\"code\":500}}\n\n",
        Some("500"),
        "boom",
    );
    check_error(
        OpenAiChat,
        b"data: {\"error\":{\"object\":\"error\",\"message\":\"context too long\",\"type\":\"BadRequestError\",\"code\":400}}\n\n",
        Some("400"),
        "context too long",
    );
}

#[test]
fn malformed_input_gives_one_error_then_nothing() {
    let bad_json =
        format!("data: {CHAT_HI}\n\ndata: {{not json\n\ndata: {CHAT_HI}\n\ndata: [DONE]\n\n");
    let events = decode_all(OpenAiChat, bad_json.as_bytes());
    assert_eq!(events[0], text("hi"));
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(error_code(&events[1]), Some(CODE_MALFORMED));

    check_error(
        OpenAiChat,
        b"data: \xff\xfe\n\n",
        Some(CODE_MALFORMED),
        "UTF-8",
    );
    check_error(
        Ollama,
        b"{\"message\":{\"content\":\"\xc3\"}}\n",
        Some(CODE_MALFORMED),
        "UTF-8",
    );
    check_error(
        Ollama,
        b"not json at all\n{\"done\":true}\n",
        Some(CODE_MALFORMED),
        "not json",
    );
    check_error(Anthropic, b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":5}}\n\n", Some(CODE_MALFORMED), "could not be read");
    check_error(OpenAiResponses, b"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":7}\n\n", Some(CODE_MALFORMED), "could not be read");
}

#[test]
fn bodies_that_are_not_streams() {
    let html = b"<html><head><title>502 Bad Gateway</title><script>alert(1)</script></head><body><h1>502 Bad Gateway</h1></body></html>\n";
    for protocol in [OpenAiChat, OpenAiResponses, Anthropic, Ollama] {
        check_error(protocol, html, Some(CODE_MALFORMED), "502 Bad Gateway");
        let events = decode_all(protocol, html);
        let StreamEvent::Error(e) = &events[0] else {
            panic!()
        };
        assert!(
            !e.message.contains('<') && !e.message.contains("alert"),
            "{}",
            e.message
        );
    }
    // A JSON error body served as if it were a stream gives the server's own message.
    let json = br#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#;
    for protocol in [OpenAiChat, OpenAiResponses, Anthropic] {
        check_error(protocol, json, Some("invalid_api_key"), "Incorrect API key");
    }
    check_error(
        Ollama,
        br#"{"error":"model 'nope' not found"}"#,
        None,
        "model 'nope' not found",
    );
}

#[test]
fn cut_off_and_empty_bodies() {
    for protocol in [OpenAiChat, OpenAiResponses, Anthropic, Ollama] {
        check_error(protocol, b"", Some(CODE_CUT_OFF), "without sending a reply");
    }
    check_error(
        OpenAiChat,
        format!("data: {CHAT_HI}\n\n").as_bytes(),
        Some(CODE_CUT_OFF),
        "cut off",
    );
    check_error(
        Ollama,
        br#"{"message":{"content":"a"},"done":false}"#,
        Some(CODE_CUT_OFF),
        "cut off",
    );
    check_error(
        Anthropic,
        b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":3}}}\n\n",
        Some(CODE_CUT_OFF),
        "cut off",
    );
}

#[test]
fn decoder_lifecycle_is_safe() {
    let mut decoder = decoder_for(OpenAiChat);
    decoder.handle_bytes(format!("data: {CHAT_HI}\n\ndata: [DONE]\n\n").as_bytes());
    decoder.handle_eof();
    decoder.handle_eof();
    decoder.handle_bytes(format!("data: {CHAT_HI}\n\n").as_bytes());
    let events: Vec<_> = std::iter::from_fn(|| decoder.poll_event()).collect();
    assert_eq!(events, vec![text("hi"), done(None)]);

    let mut decoder = decoder_for(Ollama);
    decoder.handle_eof();
    decoder.handle_bytes(b"{\"done\":true}\n");
    decoder.handle_eof();
    let events: Vec<_> = std::iter::from_fn(|| decoder.poll_event()).collect();
    assert_eq!(events.len(), 1);
    assert_eq!(error_code(&events[0]), Some(CODE_CUT_OFF));
}

#[test]
fn an_endless_line_is_refused() {
    let mut decoder = decoder_for(OpenAiChat);
    let chunk = vec![b'a'; 1 << 20];
    for _ in 0..9 {
        decoder.handle_bytes(&chunk);
    }
    decoder.handle_eof();
    let events: Vec<_> = std::iter::from_fn(|| decoder.poll_event()).collect();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(error_code(&events[0]), Some(CODE_MALFORMED));
}

#[test]
fn responses_id_is_reported_once_per_id() {
    let body = "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_a\"}}\n\n\
                event: response.in_progress\ndata: {\"type\":\"response.in_progress\",\"response\":{\"id\":\"resp_a\"}}\n\n\
                event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_a\",\"status\":\"completed\"}}\n\n";
    check(
        OpenAiResponses,
        body,
        &[response_id("resp_a"), done(Some("completed"))],
    );
    // The event name alone is enough when `type` is missing.
    let body = "event: response.output_text.delta\ndata: {\"delta\":\"x\"}\n\nevent: response.completed\ndata: {\"response\":{\"id\":\"resp_b\"}}\n\n";
    check(
        OpenAiResponses,
        body,
        &[text("x"), response_id("resp_b"), done(Some("completed"))],
    );
}

// ---- properties -------------------------------------------------------------------------------

/// Splits `bytes` at the given cut points (taken modulo the length, sorted).
fn split_at_points<'a>(bytes: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut points: Vec<usize> = cuts
        .iter()
        .map(|c| {
            if bytes.is_empty() {
                0
            } else {
                c % (bytes.len() + 1)
            }
        })
        .collect();
    points.sort_unstable();
    let mut chunks = Vec::new();
    let mut start = 0;
    for p in points {
        chunks.push(&bytes[start..p]);
        start = p;
    }
    chunks.push(&bytes[start..]);
    chunks
}

fn ending(i: u8) -> &'static str {
    ["\n", "\r\n", "\r"][i as usize % 3]
}

/// A well-formed stream for `protocol` carrying `parts` as text, with line ending `nl`.
fn stream_of(protocol: Protocol, parts: &[String], nl: &str) -> String {
    let mut s = String::new();
    let q = |t: &str| serde_json::to_string(t).unwrap();
    let sse = |s: &mut String, event: Option<&str>, data: String| {
        if let Some(event) = event {
            s.push_str(&format!("event: {event}{nl}"));
        }
        s.push_str(&format!("data: {data}{nl}{nl}"));
    };
    match protocol {
        OpenAiChat => {
            for p in parts {
                sse(
                    &mut s,
                    None,
                    format!(
                        r#"{{"choices":[{{"index":0,"delta":{{"content":{}}}}}]}}"#,
                        q(p)
                    ),
                );
            }
            sse(&mut s, None, "[DONE]".into());
        }
        OpenAiResponses => {
            for p in parts {
                let t = "response.output_text.delta";
                sse(
                    &mut s,
                    Some(t),
                    format!(r#"{{"type":"{t}","delta":{}}}"#, q(p)),
                );
            }
            let t = "response.completed";
            sse(
                &mut s,
                Some(t),
                format!(r#"{{"type":"{t}","response":{{"status":"completed"}}}}"#),
            );
        }
        Anthropic => {
            for p in parts {
                let t = "content_block_delta";
                sse(
                    &mut s,
                    Some(t),
                    format!(
                        r#"{{"type":"{t}","index":0,"delta":{{"type":"text_delta","text":{}}}}}"#,
                        q(p)
                    ),
                );
            }
            sse(
                &mut s,
                Some("message_stop"),
                r#"{"type":"message_stop"}"#.into(),
            );
        }
        Ollama => {
            for p in parts {
                s.push_str(&format!(
                    r#"{{"message":{{"role":"assistant","content":{}}},"done":false}}{nl}"#,
                    q(p)
                ));
            }
            s.push_str(&format!(
                r#"{{"message":{{"role":"assistant","content":""}},"done":true}}{nl}"#
            ));
        }
    }
    s
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_bytes_never_panic_and_ignore_chunking(
        bytes in proptest::collection::vec(any::<u8>(), 0..600),
        cuts in proptest::collection::vec(any::<usize>(), 0..6),
    ) {
        for protocol in Protocol::ALL {
            let whole = decode_chunks(protocol, [bytes.as_slice()]);
            assert_shape(&whole, "arbitrary bytes");
            let chunked = decode_chunks(protocol, split_at_points(&bytes, &cuts));
            prop_assert_eq!(&chunked, &whole);
        }
    }

    #[test]
    fn arbitrary_sse_like_lines_never_panic(
        lines in proptest::collection::vec(
            prop_oneof![
                Just("data: [DONE]".to_string()),
                Just(String::new()),
                Just(": c".to_string()),
                "(event|data|id): [ -~]{0,30}",
                "data: \\{\"(choices|type|delta|error|message|usage)\":[ -~]{0,20}\\}",
                any::<String>(),
            ],
            0..20,
        ),
        nl in 0u8..3,
        cuts in proptest::collection::vec(any::<usize>(), 0..6),
    ) {
        let body = lines.join(ending(nl));
        for protocol in Protocol::ALL {
            let whole = decode_chunks(protocol, [body.as_bytes()]);
            assert_shape(&whole, "sse-like lines");
            prop_assert_eq!(decode_chunks(protocol, split_at_points(body.as_bytes(), &cuts)), whole);
        }
    }

    #[test]
    fn any_text_survives_any_chunking(
        parts in proptest::collection::vec(any::<String>(), 0..8),
        nl in 0u8..3,
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
    ) {
        for protocol in Protocol::ALL {
            let body = stream_of(protocol, &parts, ending(nl));
            let events = decode_chunks(protocol, split_at_points(body.as_bytes(), &cuts));
            let mut got = String::new();
            for e in &events[..events.len() - 1] {
                match e {
                    StreamEvent::TextDelta(t) => got.push_str(t),
                    other => prop_assert!(false, "unexpected {:?}", other),
                }
            }
            prop_assert!(matches!(events.last(), Some(StreamEvent::Done { .. })), "{:?}", events.last());
            prop_assert_eq!(got, parts.concat());
        }
    }
}

// ---- replies cut by the cap, and the cached prompt tokens ------------------------------------

#[test]
fn openai_chat_llamacpp_capped_with_cache_n() {
    let mut expected = texts(&[
        "Paris", " is", " the", " capital", " of", " France", ".", " It", " lies", " on", " the",
        " Se",
    ]);
    // llama-server's timings: `cache_n` prompt tokens from the slot's cache, `prompt_n` evaluated.
    let timings = StreamEvent::Timings(Timings {
        tokens: Some(12),
        first_token_ms: Some(38.114),
        tokens_per_s: Some(124.33557137380456),
    });
    expected.extend([usage(2852, 12), timings, cached(2840), done(Some("length"))]);
    check_fixture("openai-chat-llamacpp-capped.sse", OpenAiChat, expected);
}

#[test]
fn openai_chat_cached_tokens_and_length() {
    let mut expected = texts(&["Once", " upon", " a", " time", ",", " in", " a", " kingdom"]);
    expected.extend([usage(3071, 8), cached(2816), done(Some("length"))]);
    check_fixture("openai-chat-cached-length.sse", OpenAiChat, expected);
}

#[test]
fn openai_responses_incomplete_with_cached_tokens() {
    check_fixture(
        "openai-responses-incomplete-cached.sse",
        OpenAiResponses,
        vec![
            response_id(RESP_ID),
            text("Once upon"),
            text(" a time"),
            usage(1290, 4),
            cached(1152),
            done(Some("max_output_tokens")),
        ],
    );
}

#[test]
fn ollama_length() {
    let mut expected = texts(&["The", " three", " primary", " colours", " are"]);
    expected.extend([
        ollama_timings(5, 109_377_000, 98_214_000, 14_522_916),
        usage(31, 5),
        done(Some("length")),
    ]);
    check_fixture("ollama-length.ndjson", Ollama, expected);
}

#[test]
fn anthropic_max_tokens_with_cache_read() {
    let mut expected = texts(&["Il était", " une fois, dans", " un royaume "]);
    // All prompt tokens (fresh, written to and read from the cache), then those read from it.
    expected.extend([usage(12 + 2840, 16), cached(2840), done(Some("max_tokens"))]);
    check_fixture("anthropic-max-tokens-cached.sse", Anthropic, expected);
}

#[test]
fn a_cached_count_in_message_delta_alone_is_reported() {
    let body = concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n",
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"input_tokens\":3,\"cache_read_input_tokens\":900,\"output_tokens\":2}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    );
    assert_eq!(
        decode_all(Anthropic, body.as_bytes()),
        vec![usage(903, 2), cached(900), done(Some("end_turn"))]
    );
}
