#![cfg(not(target_arch = "wasm32"))]
//! Settings: deployment defaults from config.json, user overrides, validation, presets.

use memoire::engine::assemble::{assemble, AssemblyInput};
use memoire::engine::model::{
    HistoryFormat, MemoryConfig, MemoryOverrides, Message, MessageStatus, Protocol, Role,
};
use memoire::engine::settings::*;
use memoire::engine::tokens::HeuristicEstimator;

fn defaults_from(json: &str) -> Settings {
    deployment_defaults(&parse_deployment_config(json).expect("valid config"))
}

#[test]
fn config_json_sets_defaults() {
    let s = defaults_from(
        r#"{"endpoint_url":" http://127.0.0.1:11434 ","protocol":"ollama","model":"llama3.2",
            "recent_messages":4,"history_format":"transcript"}"#,
    );
    assert_eq!(s.endpoint.base_url, "http://127.0.0.1:11434");
    assert_eq!(s.endpoint.protocol, Protocol::Ollama);
    assert_eq!(s.endpoint.model, "llama3.2");
    assert_eq!(s.memory.recent_messages, 4);
    assert_eq!(s.memory.history_format, HistoryFormat::Transcript);
    assert_eq!(
        s.memory.summary_every_pairs, 5,
        "unset fields keep the built-in default"
    );
}

#[test]
fn unknown_protocol_and_empty_config_keep_builtins() {
    let s = defaults_from(r#"{"protocol":"smoke-signals"}"#);
    assert_eq!(s, Settings::builtin());
    assert_eq!(defaults_from("{}"), Settings::builtin());
    assert!(!Settings::builtin().has_endpoint());
}

#[test]
fn garbage_config_is_an_error() {
    for bad in ["", "not json", "[1,2]", r#"{"recent_messages":"ten"}"#] {
        assert!(
            parse_deployment_config(bad).is_err(),
            "{bad:?} must be rejected"
        );
    }
}

#[test]
fn user_settings_win_over_deployment() {
    let defaults = defaults_from(r#"{"endpoint_url":"http://a.example","model":"m1"}"#);
    let mut mine = defaults.clone();
    mine.endpoint.model = "m2".into();
    assert_eq!(effective(&defaults, Some(&mine)).endpoint.model, "m2");
    assert_eq!(effective(&defaults, None).endpoint.model, "m1");
}

fn check_invalid(edit: impl Fn(&mut Settings), needle: &str) {
    let mut s = Settings::builtin();
    edit(&mut s);
    let err = s.validate().expect_err("must be invalid");
    assert!(err.contains(needle), "{err:?} should mention {needle:?}");
}

#[test]
fn validation_explains_what_to_fix() {
    assert!(Settings::builtin().validate().is_ok());
    check_invalid(
        |s| s.endpoint.base_url = "javascript:alert(1)".into(),
        "http://",
    );
    check_invalid(|s| s.endpoint.base_url = "ftp://x".into(), "http://");
    check_invalid(|s| s.memory.recent_messages = 0, "Recent messages");
    check_invalid(|s| s.memory.summary_every_pairs = 0, "Summary frequency");
    check_invalid(|s| s.memory.context_tokens = 10, "Context tokens");
    check_invalid(
        |s| s.memory.reply_reserve_tokens = s.memory.context_tokens,
        "reply reserve",
    );
}

#[test]
fn presets_fill_url_and_protocol_but_keep_a_chosen_model() {
    let anthropic = PRESETS.iter().find(|p| p.name == "Anthropic").unwrap();
    let mut s = Settings::builtin();
    apply_preset(&mut s, anthropic);
    assert_eq!(s.endpoint.protocol, Protocol::Anthropic);
    assert_eq!(s.endpoint.model, anthropic.model_hint);
    s.endpoint.model = "mine".into();
    apply_preset(&mut s, PRESETS.iter().find(|p| p.name == "Ollama").unwrap());
    assert_eq!(s.endpoint.model, "mine");
    assert_eq!(s.endpoint.protocol, Protocol::Ollama);
    assert!(PRESETS.iter().all(|p| p.base_url.starts_with("http")));
}

#[test]
fn history_load_limit_scales_with_the_budget() {
    use memoire::engine::model::MemoryConfig;
    let with = |context_tokens: u32, recent_messages: usize| {
        history_load_limit(&MemoryConfig {
            context_tokens,
            reply_reserve_tokens: 1024,
            recent_messages,
            ..MemoryConfig::default()
        })
    };
    assert_eq!(with(8192, 10), (8192 - 1024) / 16);
    assert_eq!(with(2048, 10), 64);
    assert_eq!(with(1100, 10), 20, "at least 20");
    assert_eq!(with(1100, 40), 80, "at least twice N");
    assert_eq!(with(1_000_000, 10), 2000, "at most 2000");
}

/// (memory URL, memory protocol, memory model, conversation's memory model) -> (url, protocol, model, key).
fn check_memory_endpoint(
    memory: (&str, Protocol, &str),
    conversation_model: Option<&str>,
    expected: (&str, Protocol, &str, Option<&str>),
) {
    let mut s = Settings::builtin();
    s.endpoint.base_url = "https://api.example.com/v1".into();
    s.endpoint.model = "big-model".into();
    s.endpoint.api_key = Some("chat-key".into());
    s.memory_endpoint = MemoryEndpoint {
        base_url: memory.0.into(),
        protocol: memory.1,
        model: memory.2.into(),
        api_key: Some("memory-key".into()),
        key_origin: String::new(),
    };
    let o = MemoryOverrides {
        memory_model: conversation_model.map(str::to_string),
        ..Default::default()
    };
    let e = s.memory_endpoint_for(&o);
    let got = (
        e.base_url.as_str(),
        e.protocol,
        e.model.as_str(),
        e.api_key.as_deref(),
    );
    assert_eq!(got, expected, "{memory:?} {conversation_model:?}");
}

#[test]
fn memory_updates_go_to_the_memory_model_and_endpoint() {
    use Protocol::{Ollama, OpenAiChat};
    let chat = "https://api.example.com/v1";
    check_memory_endpoint(
        ("", Ollama, ""),
        None,
        (chat, OpenAiChat, "big-model", Some("chat-key")),
    );
    check_memory_endpoint(
        ("", Ollama, "small"),
        None,
        (chat, OpenAiChat, "small", Some("chat-key")),
    );
    check_memory_endpoint(
        ("", Ollama, "small"),
        Some("tiny"),
        (chat, OpenAiChat, "tiny", Some("chat-key")),
    );
    check_memory_endpoint(
        ("", Ollama, ""),
        Some("  "),
        (chat, OpenAiChat, "big-model", Some("chat-key")),
    );
    let local = "http://127.0.0.1:11434";
    check_memory_endpoint(
        (local, Ollama, "llama3.2:1b"),
        None,
        (local, Ollama, "llama3.2:1b", Some("memory-key")),
    );
    check_memory_endpoint(
        (local, Ollama, "llama3.2:1b"),
        Some("qwen"),
        (local, Ollama, "qwen", Some("memory-key")),
    );
}

#[test]
fn settings_saved_before_the_memory_endpoint_existed_still_load() {
    let mut v = serde_json::to_value(Settings::builtin()).unwrap();
    v.as_object_mut().unwrap().remove("memory_endpoint");
    let s: Settings = serde_json::from_str(&v.to_string()).expect("old settings load");
    assert_eq!(s.memory_endpoint, MemoryEndpoint::default());
}

#[test]
fn a_separate_memory_endpoint_is_validated() {
    check_invalid(
        |s| s.memory_endpoint.base_url = "ftp://x".into(),
        "memory endpoint URL",
    );
    check_invalid(
        |s| s.memory_endpoint.base_url = "http://127.0.0.1:11434".into(),
        "needs a memory model",
    );
}

/// (conversation's model, conversation's system prompt) -> (model, system prompt) of its turns.
fn check_chat_endpoint(model: Option<&str>, prompt: Option<&str>, expected: (&str, &str)) {
    let mut s = Settings::builtin();
    s.endpoint.base_url = "http://127.0.0.1:8081/v1".into();
    s.endpoint.model = "global-model".into();
    s.endpoint.system_prompt = "Global prompt.".into();
    let o = MemoryOverrides {
        model: model.map(str::to_string),
        system_prompt: prompt.map(str::to_string),
        ..Default::default()
    };
    let e = s.chat_endpoint_for(&o);
    assert_eq!(
        (e.model.as_str(), e.system_prompt.as_str()),
        expected,
        "{model:?} {prompt:?}"
    );
    assert_eq!(
        e.base_url, s.endpoint.base_url,
        "the URL is never the conversation's"
    );
}

#[test]
fn a_conversation_picks_its_model_and_system_prompt() {
    check_chat_endpoint(None, None, ("global-model", "Global prompt."));
    check_chat_endpoint(
        Some("/m/phi-3.gguf"),
        None,
        ("/m/phi-3.gguf", "Global prompt."),
    );
    check_chat_endpoint(
        None,
        Some("Talk like a pirate."),
        ("global-model", "Talk like a pirate."),
    );
    check_chat_endpoint(Some(" "), Some("\n "), ("global-model", "Global prompt."));
    check_chat_endpoint(Some("m2"), Some(" Be brief. "), ("m2", "Be brief."));
}

#[test]
fn memory_on_the_chat_endpoint_follows_the_conversations_model() {
    let mut s = Settings::builtin();
    s.endpoint.base_url = "http://127.0.0.1:8081/v1".into();
    s.endpoint.model = "global-model".into();
    let picked = MemoryOverrides {
        model: Some("picked".into()),
        ..Default::default()
    };
    assert_eq!(s.memory_endpoint_for(&picked).model, "picked");
    let both = MemoryOverrides {
        memory_model: Some("memory".into()),
        ..picked.clone()
    };
    assert_eq!(s.memory_endpoint_for(&both).model, "memory");
    s.memory_endpoint.base_url = "http://127.0.0.1:11434".into();
    s.memory_endpoint.protocol = Protocol::Ollama;
    s.memory_endpoint.model = "small".into();
    assert_eq!(
        s.memory_endpoint_for(&picked).model,
        "small",
        "another endpoint never gets the chat model"
    );
}

#[test]
fn the_assembled_prompt_uses_the_conversations_system_prompt_over_the_global_one() {
    let mut s = Settings::builtin();
    s.endpoint.system_prompt = "Global prompt.".into();
    let prompt_with = |o: &MemoryOverrides| {
        let e = s.chat_endpoint_for(o);
        let new_message = Message {
            id: "m1".into(),
            conversation_id: "c".into(),
            seq: 1,
            role: Role::User,
            content: "Hello".into(),
            status: MessageStatus::Complete,
            created_at: 0,
            meta: Default::default(),
        };
        let a = assemble(
            &AssemblyInput {
                system_prompt: &e.system_prompt,
                summary: None,
                entities: &[],
                history: &[],
                new_message: &new_message,
                config: &MemoryConfig::default(),
                protocol: e.protocol,
                user_facts: &[],
                project: None,
                recall: &[],
            },
            &HeuristicEstimator,
        );
        a.prompt.system
    };
    assert_eq!(prompt_with(&MemoryOverrides::default()), "Global prompt.");
    let own = MemoryOverrides {
        system_prompt: Some("You answer in French.".into()),
        ..Default::default()
    };
    assert_eq!(prompt_with(&own), "You answer in French.");
}

// ---- credentials bound to where they were given (issue 28 item 4) ----------------------------

fn check_origin(url: &str, expected: Option<&str>) {
    assert_eq!(origin_of(url).as_deref(), expected, "{url:?}");
}

#[test]
fn an_origin_is_scheme_host_and_port() {
    check_origin("https://api.openai.com/v1", Some("https://api.openai.com"));
    check_origin(
        "HTTPS://API.OpenAI.com:443/v1/",
        Some("https://api.openai.com"),
    );
    check_origin("http://127.0.0.1:11434", Some("http://127.0.0.1:11434"));
    check_origin("http://localhost:80/v1", Some("http://localhost"));
    check_origin(
        "http://user:pw@host.example:8080/x",
        Some("http://host.example:8080"),
    );
    check_origin("http://[::1]:8080/v1", Some("http://[::1]:8080"));
    check_origin(" https://a.example?x=1 ", Some("https://a.example"));
    check_origin("ftp://a.example", None);
    check_origin("api.openai.com/v1", None);
    check_origin("", None);
    check_origin("https:///v1", None);
}

/// (key, the origin it was given for, the URL) -> what a request does with it.
fn check_key_use(key: Option<&str>, key_origin: &str, url: &str, expected: KeyUse) {
    let mut s = Settings::builtin();
    s.endpoint.base_url = url.into();
    s.endpoint.api_key = key.map(str::to_string);
    s.endpoint.key_origin = key_origin.into();
    assert_eq!(
        key_use(&s.endpoint),
        expected,
        "{key:?} for {key_origin:?} at {url:?}"
    );
}

#[test]
fn a_key_goes_only_to_its_origin_and_never_over_plain_http_to_another_machine() {
    let send = |k: &str| KeyUse::Send(k.into());
    let openai = "https://api.openai.com";
    check_key_use(None, "", "https://api.openai.com/v1", KeyUse::NoKey);
    check_key_use(
        Some("  "),
        openai,
        "https://api.openai.com/v1",
        KeyUse::NoKey,
    );
    check_key_use(Some("sk"), openai, "https://api.openai.com/v1", send("sk"));
    check_key_use(
        Some("sk"),
        openai,
        "https://API.openai.com:443/other",
        send("sk"),
    );
    check_key_use(Some("sk"), "", "https://api.openai.com/v1", send("sk"));
    check_key_use(
        Some("sk"),
        openai,
        "https://evil.example/v1",
        KeyUse::OtherOrigin {
            key_origin: openai.into(),
            url_origin: "https://evil.example".into(),
        },
    );
    check_key_use(
        Some("sk"),
        openai,
        "http://api.openai.com/v1",
        KeyUse::OtherOrigin {
            key_origin: openai.into(),
            url_origin: "http://api.openai.com".into(),
        },
    );
    for local in [
        "http://127.0.0.1:8080/v1",
        "http://localhost:11434",
        "http://llm.localhost",
        "http://[::1]:1234/v1",
        "http://127.9.9.9",
    ] {
        check_key_use(Some("k"), "", local, send("k"));
    }
    for (remote, host) in [
        ("http://192.168.1.5:11434", "192.168.1.5"),
        ("http://llm.example.com/v1", "llm.example.com"),
        ("http://127.0.0.1.evil.example", "127.0.0.1.evil.example"),
        ("http://localhost.evil.example", "localhost.evil.example"),
        ("http://0.0.0.0:8080", "0.0.0.0"),
    ] {
        check_key_use(
            Some("k"),
            "",
            remote,
            KeyUse::Insecure { host: host.into() },
        );
    }
}

fn with_key(url: &str, key: &str) -> Settings {
    let mut s = Settings::builtin();
    s.endpoint.base_url = url.into();
    s.set_key(false, key);
    s
}

#[test]
fn a_changed_origin_asks_for_the_key_again_and_saving_drops_the_old_one() {
    let mut s = with_key("https://api.openai.com/v1", "sk-openai");
    assert_eq!(s.endpoint.key_origin, "https://api.openai.com");
    s.endpoint.base_url = "https://other.example/v1".into();
    let note = key_note(&s.endpoint).expect("the form says so");
    assert!(
        note.contains("https://api.openai.com") && note.contains("https://other.example"),
        "{note}"
    );
    let saved = s.clone().settle_keys();
    assert_eq!(
        saved.endpoint.api_key, None,
        "not kept for an origin no longer named"
    );
    assert_eq!(key_use(&saved.endpoint), KeyUse::NoKey);
    // Back to the key's own origin before saving: the key is sent again, nothing was lost.
    s.endpoint.base_url = "https://api.openai.com/v2".into();
    assert_eq!(key_note(&s.endpoint), None);
    assert_eq!(
        s.settle_keys().endpoint.api_key.as_deref(),
        Some("sk-openai")
    );
    // A key typed for the new URL binds to it.
    let mut s = with_key("https://api.openai.com/v1", "sk-openai");
    s.endpoint.base_url = "https://other.example/v1".into();
    s.set_key(false, "sk-other");
    assert_eq!(key_use(&s.endpoint), KeyUse::Send("sk-other".into()));
}

#[test]
fn a_key_saved_before_keys_were_bound_binds_to_its_endpoint() {
    let mut old = Settings::builtin();
    old.endpoint.base_url = "https://api.openai.com/v1".into();
    old.endpoint.api_key = Some("sk-old".into());
    let json = serde_json::to_value(&old).unwrap();
    let mut json = json;
    json["endpoint"]
        .as_object_mut()
        .unwrap()
        .remove("key_origin");
    json["memory_endpoint"]
        .as_object_mut()
        .unwrap()
        .remove("key_origin");
    let saved: Settings = serde_json::from_value(json).expect("older settings still read");
    let s = effective(&Settings::builtin(), Some(&saved));
    assert_eq!(s.endpoint.key_origin, "https://api.openai.com");
    let mut edited = s;
    edited.endpoint.base_url = "http://127.0.0.1:8080/v1".into();
    assert!(matches!(
        key_use(&edited.endpoint),
        KeyUse::OtherOrigin { .. }
    ));
}

#[test]
fn a_preset_does_not_carry_a_key_to_another_provider() {
    let preset = |name: &str| PRESETS.iter().find(|p| p.name == name).unwrap();
    let mut s = Settings::builtin();
    apply_preset(&mut s, preset("OpenAI"));
    s.set_key(false, "sk-openai");
    apply_preset(&mut s, preset("OpenAI Responses"));
    assert_eq!(
        key_use(&s.endpoint),
        KeyUse::Send("sk-openai".into()),
        "same origin"
    );
    apply_preset(&mut s, preset("Ollama"));
    assert!(matches!(key_use(&s.endpoint), KeyUse::OtherOrigin { .. }));
    assert!(
        s.validate().is_ok(),
        "the key is not sent, so nothing is unsafe"
    );
    assert_eq!(s.settle_keys().endpoint.api_key, None);
    // A legacy (unbound) key is bound to its endpoint before the preset changes it.
    let mut s = Settings::builtin();
    s.endpoint.base_url = "https://api.openai.com/v1".into();
    s.endpoint.api_key = Some("sk-openai".into());
    apply_preset(&mut s, preset("Anthropic"));
    assert!(matches!(key_use(&s.endpoint), KeyUse::OtherOrigin { .. }));
    // A key typed before any URL follows the first URL it gets.
    let mut s = Settings::builtin();
    s.set_key(false, "sk-ant");
    apply_preset(&mut s, preset("Anthropic"));
    assert_eq!(key_use(&s.endpoint), KeyUse::Send("sk-ant".into()));
}

#[test]
fn saving_refuses_a_key_over_plain_http_to_another_machine() {
    check_invalid(
        |s| *s = with_key("http://llm.example.com/v1", "sk"),
        "unencrypted",
    );
    assert!(with_key("http://127.0.0.1:8080/v1", "sk")
        .validate()
        .is_ok());
    assert!(with_key("https://llm.example.com/v1", "sk")
        .validate()
        .is_ok());
    check_invalid(
        |s| {
            s.endpoint.base_url = "https://api.example.com/v1".into();
            s.memory_endpoint.base_url = "http://10.0.0.2:11434".into();
            s.memory_endpoint.model = "small".into();
            s.set_key(true, "mk");
        },
        "memory endpoint's API key",
    );
}

#[test]
fn the_memory_endpoints_key_is_bound_to_its_own_origin() {
    let mut s = Settings::builtin();
    s.endpoint.base_url = "https://api.example.com/v1".into();
    s.memory_endpoint.base_url = "https://memory.example/v1".into();
    s.memory_endpoint.model = "small".into();
    s.set_key(true, "mk");
    let e = s.memory_endpoint_for(&MemoryOverrides::default());
    assert_eq!(key_use(&e), KeyUse::Send("mk".into()));
    s.memory_endpoint.base_url = "https://elsewhere.example/v1".into();
    assert!(key_note(&s.memory_endpoint.as_profile()).is_some());
    let e = s.memory_endpoint_for(&MemoryOverrides::default());
    assert!(matches!(key_use(&e), KeyUse::OtherOrigin { .. }));
    assert_eq!(s.settle_keys().memory_endpoint.api_key, None);
}

// ---- setup in plain words (issue 30 item 4) --------------------------------------------------

fn check_pick(current: &str, listed: &[&str], want_model: &str, want_picked: Option<&str>) {
    let mut s = Settings::builtin();
    s.endpoint.model = current.into();
    let listed: Vec<String> = listed.iter().map(|m| m.to_string()).collect();
    let picked = pick_listed_model(&mut s, &listed);
    assert_eq!(picked.as_deref(), want_picked);
    assert_eq!(s.endpoint.model, want_model);
}

#[test]
fn test_picks_first_model_when_none_set() {
    check_pick("", &["/m/a.gguf", "b"], "/m/a.gguf", Some("/m/a.gguf"));
}

#[test]
fn test_keeps_a_model_already_set() {
    check_pick("llama3.2", &["a", "b"], "llama3.2", None);
}

#[test]
fn test_with_no_models_picks_none() {
    check_pick("", &[], "", None);
}

#[test]
fn test_skips_blank_names() {
    check_pick(" ", &["", "phi-3"], "phi-3", Some("phi-3"));
}

#[test]
fn protocols_are_named_as_users_know_them() {
    let labels: Vec<&str> = Protocol::ALL.iter().map(|p| p.label()).collect();
    assert_eq!(
        labels,
        [
            "OpenAI-compatible (Ollama, llama.cpp, LM Studio, vLLM)",
            "OpenAI Responses",
            "Ollama (native)",
            "Anthropic",
        ]
    );
}

#[test]
fn a_path_model_says_how_it_is_shown() {
    let note = model_name_note("/home/u/SmolLM2-135M-Instruct.Q4_1.gguf").unwrap();
    assert!(note.contains("SmolLM2-135M-Instruct.Q4_1"), "{note}");
    assert_eq!(model_name_note("llama3.2"), None);
}
