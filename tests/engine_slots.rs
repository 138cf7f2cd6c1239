//! A llama.cpp server's slots (`engine::slots`): what `/props` is read as, which slot each request
//! goes to, and what each protocol's body carries of it.

use memoire::engine::model::{EndpointProfile, Prompt, Protocol, Role, WireMessage};
use memoire::engine::request::{build, chat_options, props_request};
use memoire::engine::slots::{parse_props, slot_for, LlamaServer, Purpose, SlotUse, MAX_SLOTS};
use serde_json::Value;

fn endpoint(protocol: Protocol, base_url: &str, api_key: Option<&str>) -> EndpointProfile {
    EndpointProfile {
        id: "e1".into(),
        base_url: base_url.into(),
        protocol,
        model: "m".into(),
        api_key: api_key.map(str::to_string),
        key_origin: String::new(),
        system_prompt: String::new(),
        no_user_memory: false,
    }
}

/// What a `/props` body is read as: `Some(slots)` or not a llama.cpp server.
fn check_props(body: &str, expected: Option<u32>) {
    let got = parse_props(body).map(|s| s.total_slots);
    assert_eq!(got, expected, "{body}");
}

/// What llama-server answers, in part: its slots beside its default generation settings.
fn llama_props(total_slots: &str) -> String {
    format!(
        r#"{{"default_generation_settings":{{"n_ctx":8192,"params":{{"temperature":0.8}}}},"total_slots":{total_slots},"model_path":"m.gguf","build_info":"b6000-abc","chat_template":"{{{{ x }}}}"}}"#
    )
}

/// The context a slot of the server that answered `body` holds.
fn check_n_ctx(body: &str, expected: Option<u32>) {
    assert_eq!(parse_props(body).and_then(|s| s.n_ctx), expected, "{body}");
}

#[test]
fn props_say_how_many_tokens_a_slot_holds() {
    check_n_ctx(&llama_props("1"), Some(8192));
    let with =
        |n: &str| format!(r#"{{"default_generation_settings":{{"n_ctx":{n}}},"total_slots":4}}"#);
    check_n_ctx(&with("2048"), Some(2048));
    check_n_ctx(&with("0"), None);
    check_n_ctx(&with("12"), None);
    check_n_ctx(&with("\"2048\""), None);
    check_n_ctx(&with("99999999999"), None);
    check_n_ctx(
        r#"{"default_generation_settings":{},"total_slots":1}"#,
        None,
    );
    assert_eq!(
        parse_props(r#"{"default_generation_settings":{},"total_slots":1}"#).map(|s| s.total_slots),
        Some(1),
        "a server that does not say still has its slots"
    );
}

#[test]
fn props_bodies_are_read_only_when_they_are_llama_servers() {
    check_props(&llama_props("1"), Some(1));
    check_props(&llama_props("4"), Some(4));
    check_props(&llama_props("99999999999"), Some(MAX_SLOTS));
    check_props(&llama_props("0"), None);
    check_props(&llama_props("-1"), None);
    check_props(&llama_props("2.5"), None);
    check_props(&llama_props("\"2\""), None);
    // llama-cpp-python's and OpenAI's 404 bodies, a model list, garbage.
    check_props(r#"{"detail":"Not Found"}"#, None);
    check_props(
        r#"{"error":{"message":"Invalid URL (GET /props)","type":"invalid_request_error"}}"#,
        None,
    );
    check_props(r#"{"object":"list","data":[{"id":"m"}]}"#, None);
    check_props(r#"{"total_slots":2}"#, None);
    check_props(
        r#"{"total_slots":2,"default_generation_settings":null}"#,
        None,
    );
    check_props("<html>404</html>", None);
    check_props("", None);
}

/// A request for `purpose` to a server with `slots` (`None`: not llama.cpp's) names `expected`.
fn check_slot(slots: Option<u32>, purpose: Purpose, expected: Option<Option<u32>>) {
    let server = slots.map(|total_slots| LlamaServer {
        total_slots,
        n_ctx: None,
    });
    let got = slot_for(server, purpose).map(|s| s.id_slot);
    assert_eq!(got, expected, "{slots:?} {purpose:?}");
}

#[test]
fn chat_and_memory_go_to_slots_of_their_own_when_the_server_has_them() {
    use Purpose::*;
    check_slot(None, Chat, None);
    check_slot(None, Memory, None);
    check_slot(None, Title, None);
    // One slot: its cache, no slot named.
    check_slot(Some(1), Chat, Some(None));
    check_slot(Some(1), Memory, Some(None));
    check_slot(Some(1), Title, Some(None));
    check_slot(Some(2), Chat, Some(Some(0)));
    check_slot(Some(2), Memory, Some(Some(1)));
    check_slot(Some(2), Title, Some(Some(1)));
    check_slot(Some(4), Chat, Some(Some(0)));
    check_slot(Some(4), Memory, Some(Some(1)));
    check_slot(Some(4), Title, Some(Some(3)));
}

fn prompt() -> Prompt {
    Prompt {
        system: "sys".into(),
        messages: vec![WireMessage::text(Role::User, "hi".into())],
    }
}

/// The chat body of `protocol` with `slot` carries `cache_prompt` and `id_slot` as `expected`.
fn check_body(protocol: Protocol, slot: Option<SlotUse>, expected: (Option<bool>, Option<u64>)) {
    let mut opts = chat_options(512, None);
    opts.slot = slot;
    let req = build(
        &endpoint(protocol, "http://localhost:8080", None),
        &prompt(),
        &opts,
    )
    .unwrap();
    let body: Value = serde_json::from_str(&req.body).unwrap();
    let got = (body["cache_prompt"].as_bool(), body["id_slot"].as_u64());
    assert_eq!(got, expected, "{protocol:?} {slot:?}: {body}");
}

#[test]
fn only_openai_chat_bodies_carry_the_cache_and_slot() {
    use Protocol::*;
    let named = Some(SlotUse { id_slot: Some(1) });
    let unnamed = Some(SlotUse { id_slot: None });
    check_body(OpenAiChat, None, (None, None));
    check_body(OpenAiChat, unnamed, (Some(true), None));
    check_body(OpenAiChat, named, (Some(true), Some(1)));
    for other in [OpenAiResponses, Ollama, Anthropic] {
        check_body(other, named, (None, None));
    }
}

/// Where `/props` is asked for an endpoint typed as `base` (`None`: not asked).
fn check_props_url(protocol: Protocol, base: &str, expected: Option<&str>) {
    let got = props_request(&endpoint(protocol, base, None)).map(|r| r.unwrap().url);
    assert_eq!(got.as_deref(), expected, "{base}");
}

#[test]
fn props_are_asked_at_the_servers_root() {
    use Protocol::*;
    check_props_url(
        OpenAiChat,
        "http://localhost:8080",
        Some("http://localhost:8080/props"),
    );
    check_props_url(
        OpenAiChat,
        "http://localhost:8080/v1/",
        Some("http://localhost:8080/props"),
    );
    check_props_url(
        OpenAiChat,
        "http://box.lan/llama/v1/chat/completions",
        Some("http://box.lan/llama/props"),
    );
    check_props_url(OpenAiResponses, "http://localhost:8080", None);
    check_props_url(Ollama, "http://localhost:11434", None);
    check_props_url(Anthropic, "http://localhost:8080", None);
}

#[test]
fn props_carry_the_key_by_the_same_rules_as_every_request() {
    let local = endpoint(Protocol::OpenAiChat, "http://localhost:8080", Some("k"));
    let req = props_request(&local).unwrap().unwrap();
    assert_eq!(req.method, "GET");
    assert!(req
        .headers
        .contains(&("Authorization".into(), "Bearer k".into())));
    let remote = endpoint(Protocol::OpenAiChat, "http://192.0.2.7:8080", Some("k"));
    assert!(
        props_request(&remote).unwrap().is_err(),
        "no key over plain http to another machine"
    );
}
