#![cfg(not(target_arch = "wasm32"))]
//! Settings: deployment defaults from config.json, user overrides, validation, presets.

use memoire::engine::model::{HistoryFormat, Protocol};
use memoire::engine::settings::*;

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
