#![cfg(not(target_arch = "wasm32"))]
//! Request builders (exact URLs, headers and JSON bodies per protocol), the model list, and the
//! classification of failures into messages a user can act on.

use memoire::engine::decode::{StreamError, CODE_CUT_OFF, CODE_MALFORMED};
use memoire::engine::failure::{
    aborted, classify_http, from_stream_error, network_failure, parse_retry_after,
    sanitize_snippet, timeout, FailureKind,
};
use memoire::engine::model::MemoryConfig;
use memoire::engine::model::{
    EndpointProfile, Prompt, Protocol, ReasoningEffort, Role, WireMessage,
};
use memoire::engine::request::{
    build, build_with_reasoning, chat_options, models_request, parse_models, reply_cap,
    ModelsError, RequestOptions,
};
use memoire::engine::settings::Settings;
use serde_json::{json, Value};

use Protocol::{Anthropic, Ollama, OpenAiChat, OpenAiResponses};

// ---- helpers ----------------------------------------------------------------------------------

fn endpoint(protocol: Protocol, base_url: &str, api_key: Option<&str>) -> EndpointProfile {
    EndpointProfile {
        id: "e1".into(),
        base_url: base_url.into(),
        protocol,
        model: "m-1".into(),
        api_key: api_key.map(str::to_string),
        key_origin: String::new(),
        system_prompt: "ignored by the builders".into(),
        no_user_memory: false,
    }
}

fn msg(role: Role, content: &str) -> WireMessage {
    WireMessage {
        role,
        content: content.into(),
        images: vec![],
        tool_calls: vec![],
    }
}

/// System "Be brief.", then user / assistant / user.
fn prompt() -> Prompt {
    Prompt {
        system: "Be brief.".into(),
        messages: vec![
            msg(Role::User, "Hi, I'm Zoë 👋"),
            msg(Role::Assistant, "Hello Zoë!"),
            msg(Role::User, "What's my name?"),
        ],
    }
}

fn streaming() -> RequestOptions {
    RequestOptions {
        temperature: Some(0.7),
        max_tokens: Some(256),
        previous_response_id: None,
        stream: true,
        output: None,
        slot: None,
    }
}

/// Builds the request and compares method, url, headers (as a set, in order) and the JSON body.
fn check(
    endpoint: &EndpointProfile,
    prompt: &Prompt,
    opts: &RequestOptions,
    url: &str,
    headers: &[(&str, &str)],
    body: Value,
) {
    let req = build(endpoint, prompt, opts).expect("the key may go there");
    let what = format!("{} {}", endpoint.protocol.as_str(), endpoint.base_url);
    assert_eq!(req.method, "POST", "{what}");
    assert_eq!(req.url, url, "{what}");
    let expected: Vec<(String, String)> = headers
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    assert_eq!(req.headers, expected, "{what}");
    let got: Value = serde_json::from_str(&req.body).expect("body is JSON");
    assert_eq!(got, body, "{what}");
}

const JSON: (&str, &str) = ("Content-Type", "application/json");

type Headers<'a> = &'a [(&'a str, &'a str)];

// ---- bodies and headers -----------------------------------------------------------------------

#[test]
fn openai_chat_request() {
    let cases: &[(Option<&str>, Headers)] = &[
        (
            Some("sk-test"),
            &[JSON, ("Authorization", "Bearer sk-test")],
        ),
        (None, &[JSON]),
        (Some("  "), &[JSON]),
    ];
    for (key, headers) in cases {
        check(
            &endpoint(OpenAiChat, "https://api.openai.com/v1/", *key),
            &prompt(),
            &streaming(),
            "https://api.openai.com/v1/chat/completions",
            headers,
            json!({
                "model": "m-1",
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "Hi, I'm Zoë 👋"},
                    {"role": "assistant", "content": "Hello Zoë!"},
                    {"role": "user", "content": "What's my name?"},
                ],
                "stream": true,
                "stream_options": {"include_usage": true},
                "temperature": 0.7,
                "max_tokens": 256,
            }),
        );
    }
    // Not streaming, no knobs, no system prompt: only what is needed.
    let bare = Prompt {
        system: String::new(),
        messages: vec![msg(Role::User, "hi"), msg(Role::Tool, "42")],
    };
    check(
        &endpoint(OpenAiChat, "http://localhost:8080", None),
        &bare,
        &RequestOptions::default(),
        "http://localhost:8080/v1/chat/completions",
        &[JSON],
        json!({
            "model": "m-1",
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "user", "content": "Tool result:\n42"},
            ],
            "stream": false,
        }),
    );
}

#[test]
fn openai_responses_request_fresh_and_resumed() {
    let ep = endpoint(OpenAiResponses, "https://api.openai.com/v1", Some("sk-r"));
    let headers = [JSON, ("Authorization", "Bearer sk-r")];
    check(
        &ep,
        &prompt(),
        &streaming(),
        "https://api.openai.com/v1/responses",
        &headers,
        json!({
            "model": "m-1",
            "instructions": "Be brief.",
            "input": [
                {"role": "user", "content": "Hi, I'm Zoë 👋"},
                {"role": "assistant", "content": "Hello Zoë!"},
                {"role": "user", "content": "What's my name?"},
            ],
            "store": true,
            "stream": true,
            "temperature": 0.7,
            "max_output_tokens": 256,
        }),
    );
    let resumed = RequestOptions {
        previous_response_id: Some("resp_123".into()),
        temperature: None,
        max_tokens: None,
        ..streaming()
    };
    check(
        &ep,
        &prompt(),
        &resumed,
        "https://api.openai.com/v1/responses",
        &headers,
        json!({
            "model": "m-1",
            "instructions": "Be brief.",
            "input": [{"role": "user", "content": "What's my name?"}],
            "previous_response_id": "resp_123",
            "store": true,
            "stream": true,
        }),
    );
}

/// Every temperature a user can type with two decimals (0.00 to 2.00) goes out as that decimal in
/// every protocol, not as the f32's nearest neighbour (0.699999988...).
#[test]
fn temperatures_go_out_as_typed() {
    for hundredths in 0..=200u32 {
        let typed = format!("{}.{:02}", hundredths / 100, hundredths % 100);
        let t: f32 = typed.parse().unwrap();
        let opts = RequestOptions {
            temperature: Some(t),
            ..streaming()
        };
        for protocol in [OpenAiChat, OpenAiResponses, Anthropic, Ollama] {
            let req = build(
                &endpoint(protocol, "http://127.0.0.1:1", None),
                &prompt(),
                &opts,
            )
            .expect("the key may go there");
            let body: Value = serde_json::from_str(&req.body).unwrap();
            let sent = if protocol == Ollama {
                &body["options"]["temperature"]
            } else {
                &body["temperature"]
            };
            // Anthropic's range is 0 to 1: above it, 1.
            let want = match protocol {
                Anthropic => typed.parse::<f64>().unwrap().min(1.0),
                _ => typed.parse::<f64>().unwrap(),
            };
            assert_eq!(sent.as_f64(), Some(want), "{typed} over {protocol:?}");
        }
    }
}

#[test]
fn ollama_request() {
    let cases: &[(RequestOptions, Value)] = &[
        (streaming(), json!({"temperature": 0.7, "num_predict": 256})),
        (
            RequestOptions {
                max_tokens: None,
                ..streaming()
            },
            json!({"temperature": 0.7}),
        ),
    ];
    for (opts, options) in cases {
        check(
            &endpoint(Ollama, "http://localhost:11434/", None),
            &prompt(),
            opts,
            "http://localhost:11434/api/chat",
            &[JSON],
            json!({
                "model": "m-1",
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "Hi, I'm Zoë 👋"},
                    {"role": "assistant", "content": "Hello Zoë!"},
                    {"role": "user", "content": "What's my name?"},
                ],
                "stream": true,
                "options": options,
            }),
        );
    }
    // No knobs: no `options` at all; Ollama keeps its native tool role.
    let p = Prompt {
        system: String::new(),
        messages: vec![msg(Role::Tool, "42")],
    };
    check(
        &endpoint(Ollama, "http://localhost:11434", Some("k")),
        &p,
        &RequestOptions {
            stream: true,
            ..RequestOptions::default()
        },
        "http://localhost:11434/api/chat",
        &[JSON, ("Authorization", "Bearer k")],
        json!({"model": "m-1", "messages": [{"role": "tool", "content": "42"}], "stream": true}),
    );
}

const ANTHROPIC_HEADERS: [(&str, &str); 4] = [
    JSON,
    ("x-api-key", "sk-ant"),
    ("anthropic-version", "2023-06-01"),
    ("anthropic-dangerous-direct-browser-access", "true"),
];

#[test]
fn anthropic_request() {
    check(
        &endpoint(Anthropic, "https://api.anthropic.com", Some("sk-ant")),
        &prompt(),
        &streaming(),
        "https://api.anthropic.com/v1/messages",
        &ANTHROPIC_HEADERS,
        json!({
            "model": "m-1",
            "max_tokens": 256,
            "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
            "messages": [
                {"role": "user", "content": "Hi, I'm Zoë 👋"},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Hello Zoë!", "cache_control": {"type": "ephemeral"}},
                ]},
                {"role": "user", "content": "What's my name?"},
            ],
            "stream": true,
            "temperature": 0.7,
        }),
    );
}

#[test]
fn anthropic_alternation_and_defaults() {
    // History opening with the assistant, a system message inside the history, an empty message,
    // two user messages in a row, a tool result, and a temperature above 1.
    let p = Prompt {
        system: "Be brief.".into(),
        messages: vec![
            msg(Role::Assistant, "(earlier reply)"),
            msg(Role::System, "Summary: the user is Zoë."),
            msg(Role::Assistant, ""),
            msg(Role::User, "one"),
            msg(Role::User, "two"),
            msg(Role::Tool, "42"),
            msg(Role::Assistant, "ok"),
            msg(Role::User, "three"),
        ],
    };
    check(
        &endpoint(Anthropic, "https://api.anthropic.com/v1/", Some("sk-ant")),
        &p,
        &RequestOptions {
            temperature: Some(1.5),
            max_tokens: None,
            previous_response_id: None,
            stream: true,
            output: None,
            slot: None,
        },
        "https://api.anthropic.com/v1/messages",
        &ANTHROPIC_HEADERS,
        json!({
            "model": "m-1",
            "max_tokens": 4096,
            "system": [{"type": "text", "text": "Be brief.\n\nSummary: the user is Zoë.", "cache_control": {"type": "ephemeral"}}],
            "messages": [
                {"role": "user", "content": "(conversation continues)"},
                {"role": "assistant", "content": "(earlier reply)"},
                {"role": "user", "content": "one\n\ntwo\n\nTool result:\n42"},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "ok", "cache_control": {"type": "ephemeral"}},
                ]},
                {"role": "user", "content": "three"},
            ],
            "stream": true,
            "temperature": 1.0,
        }),
    );
}

// ---- reasoning effort -------------------------------------------------------------------------

/// With `effort`, the body is [`build`]'s with `changes` applied (keys set, or removed when null);
/// without, it is byte for byte [`build`]'s.
fn check_effort(protocol: Protocol, effort: Option<ReasoningEffort>, changes: Value) {
    let e = endpoint(protocol, "http://localhost:8080", None);
    let opts = streaming();
    let plain = build(&e, &prompt(), &opts).unwrap();
    let asked = build_with_reasoning(&e, &prompt(), &opts, effort).unwrap();
    assert_eq!((&asked.url, &asked.headers), (&plain.url, &plain.headers));
    if effort.is_none() {
        return assert_eq!(asked.body, plain.body, "{protocol:?}: unchanged");
    }
    let mut expected: Value = serde_json::from_str(&plain.body).unwrap();
    for (k, v) in changes.as_object().unwrap() {
        match v {
            Value::Null => expected.as_object_mut().unwrap().remove(k),
            v => expected
                .as_object_mut()
                .unwrap()
                .insert(k.clone(), v.clone()),
        };
    }
    let got: Value = serde_json::from_str(&asked.body).expect("body is JSON");
    assert_eq!(got, expected, "{protocol:?} {effort:?}");
}

#[test]
fn reasoning_effort_goes_out_in_each_protocols_own_field_and_only_when_set() {
    use ReasoningEffort::{High, Low, Medium};
    for protocol in Protocol::ALL {
        check_effort(protocol, None, json!({}));
    }
    check_effort(OpenAiChat, Some(Low), json!({"reasoning_effort": "low"}));
    check_effort(OpenAiChat, Some(High), json!({"reasoning_effort": "high"}));
    check_effort(
        OpenAiResponses,
        Some(Medium),
        json!({"reasoning": {"effort": "medium", "summary": "auto"}}),
    );
    check_effort(Ollama, Some(Low), json!({"think": true}));
    check_effort(
        Anthropic,
        Some(Low),
        json!({"thinking": {"type": "enabled", "budget_tokens": 2048}, "max_tokens": 2304, "temperature": null}),
    );
    check_effort(
        Anthropic,
        Some(High),
        json!({"thinking": {"type": "enabled", "budget_tokens": 24576}, "max_tokens": 24832, "temperature": null}),
    );
    // Per model: set for one, none for another; clearing removes it.
    let mut s = Settings::builtin();
    s.set_reasoning_effort(" qwen3 ", Some(High));
    assert_eq!(s.reasoning_effort_for("qwen3"), Some(High));
    assert_eq!(s.reasoning_effort_for("llama3.2"), None);
    s.set_reasoning_effort("qwen3", None);
    assert_eq!(s.reasoning_effort_for("qwen3"), None);
    assert!(!serde_json::to_string(&s)
        .unwrap()
        .contains("reasoning_effort"));
}

// ---- reply cap --------------------------------------------------------------------------------

/// A chat turn's request with "Room kept for the reply" at `reserve` (and reasoning `effort`) has
/// `expected` at `pointer` in its body, and no other protocol's cap field.
fn check_cap(
    protocol: Protocol,
    reserve: u32,
    effort: Option<ReasoningEffort>,
    pointer: &str,
    expected: Value,
) {
    let config = MemoryConfig {
        reply_reserve_tokens: reserve,
        ..MemoryConfig::default()
    };
    let e = endpoint(protocol, "http://localhost:8080", None);
    let opts = chat_options(reply_cap(&config), None);
    let req = build_with_reasoning(&e, &prompt(), &opts, effort).unwrap();
    let body: Value = serde_json::from_str(&req.body).unwrap();
    let what = format!("{protocol:?} reserve {reserve} {effort:?}");
    assert_eq!(body.pointer(pointer), Some(&expected), "{what}: {body}");
    assert_eq!(body["stream"], json!(true), "{what}");
    // Only the protocol's own field carries it.
    let others = [
        "/max_tokens",
        "/max_output_tokens",
        "/options/num_predict",
        "/max_completion_tokens",
    ];
    for other in others.iter().filter(|o| **o != pointer) {
        assert_eq!(body.pointer(other), None, "{what}: {other}");
    }
}

#[test]
fn every_chat_request_carries_the_reply_cap_in_its_protocols_field() {
    use ReasoningEffort::{High, Low};
    check_cap(OpenAiChat, 1024, None, "/max_tokens", json!(1024));
    check_cap(
        OpenAiResponses,
        1024,
        None,
        "/max_output_tokens",
        json!(1024),
    );
    check_cap(Ollama, 1024, None, "/options/num_predict", json!(1024));
    check_cap(Anthropic, 1024, None, "/max_tokens", json!(1024));
    check_cap(OpenAiChat, 300, None, "/max_tokens", json!(300));
    check_cap(
        OpenAiResponses,
        4000,
        None,
        "/max_output_tokens",
        json!(4000),
    );
    check_cap(Ollama, 77, None, "/options/num_predict", json!(77));
    check_cap(Anthropic, 2500, None, "/max_tokens", json!(2500));
    // Nothing is no cap: the smallest one goes out.
    check_cap(OpenAiChat, 0, None, "/max_tokens", json!(16));
    check_cap(Ollama, 0, None, "/options/num_predict", json!(16));
    // With thinking, the cap is the room after it: anthropic's max_tokens is the budget plus the cap.
    check_cap(
        Anthropic,
        1024,
        Some(Low),
        "/max_tokens",
        json!(2048 + 1024),
    );
    check_cap(
        Anthropic,
        1024,
        Some(High),
        "/max_tokens",
        json!(24576 + 1024),
    );
    check_cap(OpenAiChat, 1024, Some(High), "/max_tokens", json!(1024));
    check_cap(
        OpenAiResponses,
        512,
        Some(Low),
        "/max_output_tokens",
        json!(512),
    );
    check_cap(Ollama, 512, Some(Low), "/options/num_predict", json!(512));
}

#[test]
fn base_urls_are_read_as_users_type_them() {
    let cases: &[(Protocol, &str, &str)] = &[
        (
            OpenAiChat,
            "http://localhost:8080",
            "http://localhost:8080/v1/chat/completions",
        ),
        (
            OpenAiChat,
            "http://localhost:8080/",
            "http://localhost:8080/v1/chat/completions",
        ),
        (
            OpenAiChat,
            "http://localhost:8080/v1",
            "http://localhost:8080/v1/chat/completions",
        ),
        (
            OpenAiChat,
            " http://localhost:8080/v1// ",
            "http://localhost:8080/v1/chat/completions",
        ),
        (
            OpenAiChat,
            "http://localhost:8080/v1/chat/completions",
            "http://localhost:8080/v1/chat/completions",
        ),
        (
            OpenAiChat,
            "https://openrouter.ai/api/v1",
            "https://openrouter.ai/api/v1/chat/completions",
        ),
        (
            OpenAiChat,
            "http://127.0.0.1:11434/v1",
            "http://127.0.0.1:11434/v1/chat/completions",
        ),
        (
            OpenAiResponses,
            "https://api.openai.com",
            "https://api.openai.com/v1/responses",
        ),
        (
            OpenAiResponses,
            "https://api.openai.com/v1/responses",
            "https://api.openai.com/v1/responses",
        ),
        (
            Ollama,
            "http://localhost:11434",
            "http://localhost:11434/api/chat",
        ),
        (
            Ollama,
            "http://localhost:11434/api",
            "http://localhost:11434/api/chat",
        ),
        (
            Ollama,
            "http://localhost:11434/api/chat",
            "http://localhost:11434/api/chat",
        ),
        (
            Ollama,
            "http://localhost:11434/v1/",
            "http://localhost:11434/api/chat",
        ),
        (
            Anthropic,
            "https://api.anthropic.com",
            "https://api.anthropic.com/v1/messages",
        ),
        (
            Anthropic,
            "https://api.anthropic.com/v1",
            "https://api.anthropic.com/v1/messages",
        ),
        (
            Anthropic,
            "https://api.anthropic.com/v1/messages/",
            "https://api.anthropic.com/v1/messages",
        ),
        (
            Anthropic,
            "https://proxy.example/anthropic",
            "https://proxy.example/anthropic/v1/messages",
        ),
    ];
    for (protocol, base, url) in cases {
        let req = build(&endpoint(*protocol, base, None), &prompt(), &streaming())
            .expect("the key may go there");
        assert_eq!(&req.url, url, "{} {base:?}", protocol.as_str());
    }
}

#[test]
fn temperatures_are_sent_as_typed() {
    for t in [0.0f32, 0.1, 0.3, 0.7, 1.0, 1.3, 2.0] {
        let req = build(
            &endpoint(OpenAiChat, "http://h", None),
            &prompt(),
            &RequestOptions {
                temperature: Some(t),
                ..RequestOptions::default()
            },
        )
        .expect("the key may go there");
        assert!(
            req.body.contains(&format!("\"temperature\":{t:?}")),
            "{t}: {}",
            req.body
        );
    }
    let nan = build(
        &endpoint(OpenAiChat, "http://h", None),
        &prompt(),
        &RequestOptions {
            temperature: Some(f32::NAN),
            ..RequestOptions::default()
        },
    )
    .expect("the key may go there");
    assert!(!nan.body.contains("temperature"), "{}", nan.body);
}

// ---- model list -------------------------------------------------------------------------------

#[test]
fn models_requests() {
    let cases: &[(Protocol, &str, Option<&str>, &str, Headers)] = &[
        (
            OpenAiChat,
            "http://localhost:1234",
            Some("k"),
            "http://localhost:1234/v1/models",
            &[("Authorization", "Bearer k")],
        ),
        (
            OpenAiResponses,
            "https://api.openai.com/v1",
            None,
            "https://api.openai.com/v1/models",
            &[],
        ),
        (
            Ollama,
            "http://localhost:11434/",
            None,
            "http://localhost:11434/api/tags",
            &[],
        ),
        (
            Anthropic,
            "https://api.anthropic.com",
            Some("sk-ant"),
            "https://api.anthropic.com/v1/models",
            &ANTHROPIC_HEADERS[1..],
        ),
    ];
    for (protocol, base, key, url, headers) in cases {
        let req = models_request(&endpoint(*protocol, base, *key)).expect("the key may go there");
        assert_eq!(req.method, "GET");
        assert_eq!(&req.url, url);
        assert!(req.body.is_empty());
        let expected: Vec<(String, String)> = headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(req.headers, expected, "{url}");
    }
}

#[test]
fn model_lists_are_parsed() {
    type Case<'a> = (Protocol, &'a str, Result<Vec<&'a str>, ModelsError>);
    let cases: &[Case] = &[
        (
            OpenAiChat,
            r#"{"object":"list","data":[{"id":"gpt-4o","object":"model"},{"id":"smollm2"},{"id":"gpt-4o"},{"id":""},{"x":1}]}"#,
            Ok(vec!["gpt-4o", "smollm2"]),
        ),
        (
            Ollama,
            r#"{"models":[{"name":"llama3.2:latest","model":"llama3.2:latest","size":2019393189},{"model":"qwen2.5:7b"}]}"#,
            Ok(vec!["llama3.2:latest", "qwen2.5:7b"]),
        ),
        (
            Anthropic,
            r#"{"data":[{"type":"model","id":"claude-sonnet-4-20250514","display_name":"Claude Sonnet 4"}],"has_more":false}"#,
            Ok(vec!["claude-sonnet-4-20250514"]),
        ),
        (OpenAiChat, "<html>nope</html>", Err(ModelsError::NotJson)),
        (
            OpenAiChat,
            r#"{"models":[]}"#,
            Err(ModelsError::Shape("data")),
        ),
        (Ollama, r#"{"data":[]}"#, Err(ModelsError::Shape("models"))),
    ];
    for (protocol, body, expected) in cases {
        let expected = expected
            .clone()
            .map(|v| v.into_iter().map(str::to_string).collect::<Vec<_>>());
        assert_eq!(parse_models(*protocol, body), expected, "{body}");
    }
}

// ---- failures ---------------------------------------------------------------------------------

const NOW: i64 = 1_445_412_480_000; // Wed, 21 Oct 2015 07:28:00 GMT

/// Classifies and checks the kind, the status and that the message contains every needle.
fn check_http(
    status: u16,
    retry_after: Option<&str>,
    body: &str,
    resuming: bool,
    kind: FailureKind,
    needles: &[&str],
) {
    let f = classify_http(status, retry_after, body, resuming, NOW);
    assert_eq!(f.kind, kind, "{status} {body:?}: {}", f.message);
    assert_eq!(f.status, Some(status));
    for needle in needles {
        assert!(
            f.text().contains(needle),
            "{:?} lacks {needle:?}",
            f.message
        );
    }
    assert!(!f.text().contains('<'), "HTML leaked: {}", f.message);
}

#[test]
fn http_failures() {
    use FailureKind::*;
    let openai_key = r#"{"error":{"message":"Incorrect API key provided: sk-abc.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#;
    let not_found = r#"{"error":{"message":"Previous response with id 'resp_1' not found.","type":"invalid_request_error","param":"previous_response_id","code":"previous_response_not_found"}}"#;
    let ollama_404 = r#"{"error":"model \"llama9\" not found, try pulling it first"}"#;
    let llama_500 = r#"{"error":{"message":"  Invalid request: 'messages' is required  ","type":"server_error"}}"#;
    let html = "<html><head><style>h1{color:red}</style></head><body><h1>503 Service Unavailable</h1><script>evil()</script>No server is available.</body></html>";
    type Case<'a> = (
        u16,
        Option<&'a str>,
        &'a str,
        bool,
        FailureKind,
        &'a [&'a str],
    );
    let cases: &[Case] = &[
        (
            401,
            None,
            openai_key,
            false,
            Auth,
            &["API key", "Incorrect API key provided"],
        ),
        (403, None, "", false, Auth, &["API key", "403"]),
        (404, None, "", false, NotFound, &["address", "model"]),
        (
            404,
            None,
            ollama_404,
            false,
            NotFound,
            &["address", "model \"llama9\" not found"],
        ),
        (
            429,
            Some("20"),
            "",
            false,
            RateLimited {
                retry_after_secs: Some(20),
            },
            &["rate limit", "20 seconds"],
        ),
        (
            429,
            Some("Wed, 21 Oct 2015 07:28:45 GMT"),
            "",
            false,
            RateLimited {
                retry_after_secs: Some(45),
            },
            &["45 seconds"],
        ),
        (
            429,
            Some("soon"),
            "",
            false,
            RateLimited {
                retry_after_secs: None,
            },
            &["Wait a moment"],
        ),
        (
            429,
            None,
            "",
            false,
            RateLimited {
                retry_after_secs: None,
            },
            &["Wait a moment"],
        ),
        (
            500,
            None,
            llama_500,
            false,
            Server,
            &[
                "Server error",
                "500",
                "\"Invalid request: 'messages' is required\"",
            ],
        ),
        (
            503,
            None,
            html,
            false,
            Server,
            &["503 Service Unavailable No server is available."],
        ),
        (
            400,
            None,
            not_found,
            true,
            SessionGone,
            &["previous reply", "resp_1"],
        ),
        (
            404,
            None,
            "Previous response with id 'resp_9' does not exist",
            true,
            SessionGone,
            &["previous reply"],
        ),
        (
            400,
            None,
            r#"{"error":{"message":"Invalid 'previous_response_id': 'x'.","param":"previous_response_id"}}"#,
            true,
            SessionGone,
            &["previous reply"],
        ),
        // Not resuming: the same body is an ordinary bad request; a 5xx is never SessionGone.
        (
            400,
            None,
            not_found,
            false,
            BadRequest,
            &["rejected", "not found"],
        ),
        (500, None, not_found, true, Server, &["Server error"]),
        (413, None, "", false, BadRequest, &["too large"]),
        (
            422,
            None,
            r#"{"detail":"field required"}"#,
            false,
            BadRequest,
            &["field required"],
        ),
    ];
    for (status, retry_after, body, resuming, kind, needles) in cases {
        check_http(
            *status,
            *retry_after,
            body,
            *resuming,
            kind.clone(),
            needles,
        );
    }
    // The script and style contents never reach the message.
    let f = classify_http(503, None, html, false, NOW);
    assert!(
        !f.text().contains("evil") && !f.text().contains("color"),
        "{}",
        f.message
    );
}

#[test]
fn server_text_is_capped() {
    let body = format!(r#"{{"error":{{"message":"{}"}}}}"#, "x".repeat(5000));
    let f = classify_http(500, None, &body, false, NOW);
    assert!(f.message.chars().count() < 600, "{}", f.message.len());
    assert!(f.text().contains('…'));
}

#[test]
fn retry_after_values() {
    let cases: &[(&str, Option<u32>)] = &[
        ("0", Some(0)),
        ("120", Some(120)),
        (" 7 ", Some(7)),
        ("1.5", Some(2)),
        ("-3", None),
        ("Wed, 21 Oct 2015 07:28:00 GMT", Some(0)),
        ("Wed, 21 Oct 2015 07:29:00 GMT", Some(60)),
        ("Tue, 20 Oct 2015 07:29:00 GMT", Some(0)),
        ("Thu, 22 Oct 2015 07:28:00 GMT", Some(86_400)),
        ("Sat, 29 Feb 2020 00:00:00 GMT", Some(137_521_920)),
        ("Wed, 21 Foo 2015 07:28:00 GMT", None),
        ("Wed, 21 Oct 2015 25:28:00 GMT", None),
        ("", None),
    ];
    for (value, expected) in cases {
        assert_eq!(parse_retry_after(value, NOW), *expected, "{value:?}");
    }
}

#[test]
fn network_failures_explain_cors() {
    let cases: &[(&str, &[&str])] = &[
        (
            "http://localhost:11434",
            &["OLLAMA_ORIGINS", "looks like Ollama"],
        ),
        (
            "http://127.0.0.1:1234/v1",
            &["Enable CORS", "looks like LM Studio"],
        ),
        (
            "http://192.168.1.20:8080",
            &["CORS", "OLLAMA_ORIGINS", "llama-server"],
        ),
        ("http://[::1]:8000/v1", &["CORS", "--allowed-origins"]),
        (
            "https://api.example.com/v1",
            &["CORS", "Access-Control-Allow-Origin"],
        ),
        ("http://gpu-box.example.com:8000", &["plain http://"]),
    ];
    for (url, needles) in cases {
        let f = network_failure(url);
        assert_eq!(f.kind, FailureKind::Network);
        assert_eq!(f.status, None);
        assert!(f.text().contains("Can't reach the server"), "{}", f.message);
        for needle in *needles {
            assert!(
                f.text().contains(needle),
                "{url}: {:?} lacks {needle:?}",
                f.message
            );
        }
    }
    assert!(!network_failure("https://api.example.com")
        .message
        .contains("OLLAMA_ORIGINS"));
}

#[test]
fn other_failures() {
    assert_eq!(timeout(true).kind, FailureKind::Timeout);
    assert!(timeout(true).message.contains("did not start answering"));
    assert!(timeout(false).message.contains("partial reply was kept"));
    assert_eq!(aborted().kind, FailureKind::Aborted);
    assert!(aborted().message.contains("partial reply was kept"));
}

#[test]
fn stream_errors() {
    use FailureKind::*;
    let e = |code: Option<&str>, message: &str| StreamError {
        code: code.map(str::to_string),
        message: message.to_string(),
    };
    let gone = "Previous response with id 'resp_1' not found.";
    let cases: &[(StreamError, bool, FailureKind, &str)] = &[
        (
            e(Some("previous_response_not_found"), gone),
            true,
            SessionGone,
            "previous reply",
        ),
        (e(None, gone), true, SessionGone, "previous reply"),
        (
            e(Some("previous_response_not_found"), gone),
            false,
            Stream,
            "not found",
        ),
        (
            e(Some(CODE_CUT_OFF), "The reply was cut off."),
            false,
            Malformed,
            "partial reply was kept",
        ),
        (e(Some(CODE_MALFORMED), "bad"), false, Malformed, "protocol"),
        (
            e(Some("overloaded_error"), "Overloaded"),
            false,
            Server,
            "Overloaded",
        ),
        (
            e(Some("rate_limit_exceeded"), "slow down"),
            false,
            RateLimited {
                retry_after_secs: None,
            },
            "slow down",
        ),
        (
            e(Some("invalid_api_key"), "bad key"),
            false,
            Auth,
            "API key",
        ),
        (e(None, "<b>boom</b>"), false, Stream, "\"boom\""),
    ];
    for (error, resuming, kind, needle) in cases {
        let f = from_stream_error(error, *resuming);
        assert_eq!(&f.kind, kind, "{error:?}");
        assert!(
            f.text().contains(needle),
            "{:?} lacks {needle:?}",
            f.message
        );
        assert!(!f.text().contains('<'), "{}", f.message);
    }
}

#[test]
fn sanitizing() {
    let cases: &[(&str, usize, &str)] = &[
        ("plain", 100, "plain"),
        ("  a \n\t b  ", 100, "a b"),
        ("<p>Hello <b>there</b></p>", 100, "Hello there"),
        ("<SCRIPT>x()</script>ok", 100, "ok"),
        ("a < b && c > d", 100, "a < b && c > d"),
        (
            "Tom &amp; Jerry&nbsp;&quot;x&quot; &lt;y&gt;",
            100,
            "Tom & Jerry \"x\" &lt;y&gt;",
        ),
        ("<unclosed tag and more", 100, ""),
        ("abcdef", 4, "abc…"),
        ("日本語テキスト", 4, "日本語…"),
    ];
    for (input, max, expected) in cases {
        assert_eq!(sanitize_snippet(input, *max), *expected, "{input:?}");
    }
}

#[test]
fn dropped_connection_keeps_the_partial_reply_and_escapes_details() {
    use memoire::engine::failure::{connection_dropped, FailureKind};
    let f = connection_dropped("network error");
    assert_eq!(f.kind, FailureKind::Network);
    assert!(f.text().contains("(network error)") && f.text().contains("partial reply was kept"));
    let hostile = connection_dropped("<img src=x onerror=alert(1)>");
    assert!(!hostile.message.contains('<'), "{}", hostile.message);
    assert!(!connection_dropped("").message.contains("()"));
}

// ---- keys (issue 28 item 4) ------------------------------------------------------------------

/// The auth header a request carries for `key` given for `key_origin`, at `url`; `Err` when
/// building is refused.
fn check_key_header(url: &str, key_origin: &str, expected: Result<Option<&str>, &str>) {
    let mut e = endpoint(OpenAiChat, url, Some("sk-1"));
    e.key_origin = key_origin.into();
    let got = build(&e, &prompt(), &streaming()).map(|r| {
        r.headers
            .iter()
            .find(|(k, _)| k == "Authorization")
            .map(|(_, v)| v.clone())
    });
    let models = models_request(&e).map(|r| r.headers.iter().any(|(k, _)| k == "Authorization"));
    match expected {
        Ok(header) => {
            assert_eq!(got.as_ref().unwrap().as_deref(), header, "{url}");
            assert_eq!(models, Ok(header.is_some()), "{url}");
        }
        Err(needle) => {
            let err = got.expect_err("refused").to_string();
            assert!(err.contains(needle), "{err}");
            assert!(models.is_err(), "{url}");
        }
    }
}

#[test]
fn the_key_goes_only_where_it_was_given() {
    check_key_header(
        "https://api.openai.com/v1",
        "https://api.openai.com",
        Ok(Some("Bearer sk-1")),
    );
    check_key_header(
        "https://evil.example/v1",
        "https://api.openai.com",
        Ok(None),
    );
    check_key_header("http://127.0.0.1:9/v1", "", Ok(Some("Bearer sk-1")));
    check_key_header("http://llm.example.com/v1", "", Err("unencrypted"));
    check_key_header(
        "http://llm.example.com/v1",
        "http://llm.example.com",
        Err("llm.example.com"),
    );
}
