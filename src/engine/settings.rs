//! User settings: the endpoint profile and the memory config, endpoint presets, and how a
//! deployment's optional `config.json` defaults combine with what the user saved (user wins).
//! The endpoint is never taken from the page URL: only `config.json` and the user can set it.
//!
//! # Credential rules
//! An API key belongs to the origin (`scheme://host[:port]`) of the URL it was entered for
//! ([`key_use`]): it is sent to that origin only. Changing the URL to another origin (by hand or by
//! a preset) leaves the key with its origin: it is not sent to the new one, the form says so and
//! asks for the key again, and saving drops it ([`Settings::settle_keys`]: the form has one key
//! field, so a key kept for an origin the settings no longer name would be a secret the user can
//! neither see nor use). A key is never sent over plain `http://` to a host other than this machine
//! (`localhost`, `127.0.0.0/8`, `::1`): saving refuses it and a request built with it is an error,
//! never a silent drop. The memory endpoint's own key follows the same rules.
//! Must not import anything outside `crate::engine`.

use crate::engine::model::{
    EndpointProfile, HistoryFormat, MemoryConfig, MemoryOverrides, Protocol, ReasoningEffort,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Everything the settings dialog edits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Settings {
    pub endpoint: EndpointProfile,
    pub memory: MemoryConfig,
    /// Where memory updates go; empty fields mean "the chat endpoint's".
    #[serde(default)]
    pub memory_endpoint: MemoryEndpoint,
    /// The reasoning effort asked of each model (by name) that has one set; a model not listed
    /// gets none, and its requests carry no reasoning field at all.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub reasoning_effort: BTreeMap<String, ReasoningEffort>,
}

/// A separate model, and optionally a separate endpoint, for memory updates: a small local model can
/// keep the memory of a chat held with a large remote one. Empty fields fall back to the chat endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct MemoryEndpoint {
    /// Another endpoint's URL; empty: the chat endpoint (its URL, protocol and key).
    pub base_url: String,
    /// The protocol of `base_url` (ignored while `base_url` is empty).
    pub protocol: Protocol,
    /// The model for memory updates; empty: the chat model (or the conversation's memory model).
    pub model: String,
    /// The key for `base_url` (ignored while `base_url` is empty). Stored locally only.
    pub api_key: Option<String>,
    /// The origin the key was given for (see `EndpointProfile::key_origin`).
    pub key_origin: String,
}

/// An override's text when it says something (not `None`, not blank).
fn chosen(v: Option<&str>) -> Option<&str> {
    v.map(str::trim).filter(|s| !s.is_empty())
}

impl Settings {
    /// The endpoint a conversation's turns go to: the chat endpoint, with the conversation's model
    /// (the header's picker) and its system prompt in place of the ones in Settings when it has them.
    pub fn chat_endpoint_for(&self, o: &MemoryOverrides) -> EndpointProfile {
        let mut e = self.endpoint.clone();
        if let Some(model) = chosen(o.model.as_deref()) {
            e.model = model.to_string();
        }
        if let Some(prompt) = chosen(o.system_prompt.as_deref()) {
            e.system_prompt = prompt.to_string();
        }
        e
    }

    /// The endpoint memory updates of a conversation go to: the memory endpoint's URL, protocol and
    /// key when one is set, else the chat endpoint's; the model is the conversation's memory model,
    /// else the memory endpoint's model, else (same endpoint only) the conversation's chat model
    /// (see [`Settings::chat_endpoint_for`]).
    pub fn memory_endpoint_for(&self, o: &MemoryOverrides) -> EndpointProfile {
        let conversation_model = o.memory_model.as_deref();
        let m = &self.memory_endpoint;
        let separate = !m.base_url.trim().is_empty();
        let mut e = self.chat_endpoint_for(o);
        if separate {
            e.id = format!("{}:memory", e.id);
            e.base_url = m.base_url.trim().to_string();
            e.protocol = m.protocol;
            e.api_key = m.api_key.clone();
            e.key_origin = m.key_origin.clone();
            e.model = String::new();
        }
        let chosen = [conversation_model, Some(m.model.as_str())]
            .into_iter()
            .flatten()
            .map(str::trim)
            .find(|s| !s.is_empty());
        if let Some(model) = chosen {
            e.model = model.to_string();
        }
        e
    }
}

/// The system prompt used when neither the deployment nor the user set one.
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are a helpful assistant. The conversation so far, a summary \
of earlier parts and facts you learned are given to you; use them, and never claim you do not remember \
something that appears there.";

impl Settings {
    /// Built-in defaults: no endpoint configured yet.
    pub fn builtin() -> Settings {
        Settings {
            endpoint: EndpointProfile {
                id: "default".into(),
                base_url: String::new(),
                protocol: Protocol::OpenAiChat,
                model: String::new(),
                api_key: None,
                key_origin: String::new(),
                system_prompt: DEFAULT_SYSTEM_PROMPT.into(),
                no_user_memory: false,
            },
            memory: MemoryConfig::default(),
            memory_endpoint: MemoryEndpoint::default(),
            reasoning_effort: BTreeMap::new(),
        }
    }

    /// The reasoning effort set for `model`, if any.
    pub fn reasoning_effort_for(&self, model: &str) -> Option<ReasoningEffort> {
        self.reasoning_effort.get(model.trim()).copied()
    }

    /// Sets (or, with `None`, clears) the reasoning effort of `model`.
    pub fn set_reasoning_effort(&mut self, model: &str, effort: Option<ReasoningEffort>) {
        let model = model.trim();
        match effort {
            Some(e) if !model.is_empty() => {
                self.reasoning_effort.insert(model.to_string(), e);
            }
            _ => {
                self.reasoning_effort.remove(model);
            }
        }
    }

    /// True when an endpoint URL is set; browsing works without one, sending does not.
    pub fn has_endpoint(&self) -> bool {
        !self.endpoint.base_url.trim().is_empty()
    }

    /// Checks what the user typed; returns a message they can act on.
    pub fn validate(&self) -> Result<(), String> {
        let url = self.endpoint.base_url.trim();
        let http = url.starts_with("http://") || url.starts_with("https://");
        if !url.is_empty() && !http {
            return Err("The endpoint URL must start with http:// or https://".into());
        }
        let m = &self.memory;
        if m.recent_messages == 0 || m.recent_messages > 1000 {
            return Err("Recent messages must be between 1 and 1000.".into());
        }
        if m.summary_every_pairs == 0 || m.summary_every_pairs > 1000 {
            return Err("Summary frequency must be between 1 and 1000 pairs.".into());
        }
        if m.context_tokens < 512 || m.context_tokens > 10_000_000 {
            return Err("Context tokens must be between 512 and 10,000,000.".into());
        }
        if m.reply_reserve_tokens >= m.context_tokens {
            return Err("The reply reserve must be smaller than the context size.".into());
        }
        let memory_url = self.memory_endpoint.base_url.trim();
        let memory_http = memory_url.starts_with("http://") || memory_url.starts_with("https://");
        if !memory_url.is_empty() && !memory_http {
            return Err("The memory endpoint URL must start with http:// or https://".into());
        }
        if !memory_url.is_empty() && self.memory_endpoint.model.trim().is_empty() {
            return Err("A separate memory endpoint needs a memory model.".into());
        }
        if let KeyUse::Insecure { host } = key_use(&self.endpoint) {
            return Err(insecure_message("API key", &host));
        }
        if let KeyUse::Insecure { host } = key_use(&self.memory_endpoint_for(&Default::default())) {
            return Err(insecure_message("memory endpoint's API key", &host));
        }
        Ok(())
    }
}

/// The deployment's `config.json`: every field optional.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct DeploymentConfig {
    pub endpoint_url: Option<String>,
    pub protocol: Option<String>,
    pub model: Option<String>,
    pub system_prompt: Option<String>,
    pub recent_messages: Option<usize>,
    pub summary_every_pairs: Option<usize>,
    pub context_tokens: Option<u32>,
    pub reply_reserve_tokens: Option<u32>,
    pub history_format: Option<HistoryFormat>,
}

/// Parses `config.json`. Garbage is an error the caller shows, never a crash.
pub fn parse_deployment_config(text: &str) -> Result<DeploymentConfig, String> {
    serde_json::from_str(text).map_err(|e| format!("config.json is not valid: {e}"))
}

/// Defaults for this deployment: built-ins overlaid with `config.json`.
pub fn deployment_defaults(config: &DeploymentConfig) -> Settings {
    let mut s = Settings::builtin();
    if let Some(url) = &config.endpoint_url {
        s.endpoint.base_url = url.trim().to_string();
    }
    if let Some(p) = config.protocol.as_deref().and_then(Protocol::parse) {
        s.endpoint.protocol = p;
    }
    if let Some(m) = &config.model {
        s.endpoint.model = m.clone();
    }
    if let Some(p) = &config.system_prompt {
        s.endpoint.system_prompt = p.clone();
    }
    let m = &mut s.memory;
    m.recent_messages = config.recent_messages.unwrap_or(m.recent_messages);
    m.summary_every_pairs = config.summary_every_pairs.unwrap_or(m.summary_every_pairs);
    m.context_tokens = config.context_tokens.unwrap_or(m.context_tokens);
    m.reply_reserve_tokens = config
        .reply_reserve_tokens
        .unwrap_or(m.reply_reserve_tokens);
    m.history_format = config.history_format.unwrap_or(m.history_format);
    s
}

/// The settings in force: what the user saved wins over the deployment's defaults. A key saved
/// before keys were bound to an origin binds to the origin of the URL it was saved with.
pub fn effective(defaults: &Settings, saved: Option<&Settings>) -> Settings {
    let mut s = match saved {
        Some(s) => s.clone(),
        None => defaults.clone(),
    };
    s.bind_keys();
    s
}

/// An endpoint preset offered in the settings dialog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preset {
    pub name: &'static str,
    pub base_url: &'static str,
    pub protocol: Protocol,
    pub model_hint: &'static str,
    pub needs_key: bool,
}

/// Known endpoints. "Custom" keeps whatever the user typed.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "Ollama",
        base_url: "http://127.0.0.1:11434",
        protocol: Protocol::Ollama,
        model_hint: "llama3.2",
        needs_key: false,
    },
    Preset {
        name: "llama.cpp server",
        base_url: "http://127.0.0.1:8081/v1",
        protocol: Protocol::OpenAiChat,
        model_hint: "default",
        needs_key: false,
    },
    Preset {
        name: "LM Studio",
        base_url: "http://127.0.0.1:1234/v1",
        protocol: Protocol::OpenAiChat,
        model_hint: "",
        needs_key: false,
    },
    Preset {
        name: "vLLM",
        base_url: "http://127.0.0.1:8000/v1",
        protocol: Protocol::OpenAiChat,
        model_hint: "",
        needs_key: false,
    },
    Preset {
        name: "OpenAI",
        base_url: "https://api.openai.com/v1",
        protocol: Protocol::OpenAiChat,
        model_hint: "gpt-4o-mini",
        needs_key: true,
    },
    Preset {
        name: "OpenAI Responses",
        base_url: "https://api.openai.com/v1",
        protocol: Protocol::OpenAiResponses,
        model_hint: "gpt-4o-mini",
        needs_key: true,
    },
    Preset {
        name: "Anthropic",
        base_url: "https://api.anthropic.com",
        protocol: Protocol::Anthropic,
        model_hint: "claude-sonnet-4-5",
        needs_key: true,
    },
];

/// Applies a preset: URL and protocol always, the model only when the user has none yet. The key
/// stays bound to its origin, so a preset of another origin does not get it ([`key_use`] says
/// `OtherOrigin`, the form asks for the key, saving drops it); one of the same origin (OpenAI chat
/// and Responses) keeps it. A key typed before any URL was set binds to the first URL it gets.
pub fn apply_preset(settings: &mut Settings, preset: &Preset) {
    settings.bind_keys();
    settings.endpoint.base_url = preset.base_url.to_string();
    settings.endpoint.protocol = preset.protocol;
    if settings.endpoint.model.trim().is_empty() {
        settings.endpoint.model = preset.model_hint.to_string();
    }
}

/// After a successful "Test connection": when no model is set, the first model the server listed
/// becomes the model (a server with one model needs no choice); a model already set stays. Returns
/// the model picked, if one was.
pub fn pick_listed_model(settings: &mut Settings, listed: &[String]) -> Option<String> {
    if !settings.endpoint.model.trim().is_empty() {
        return None;
    }
    let first = listed.iter().map(|m| m.trim()).find(|m| !m.is_empty())?;
    settings.endpoint.model = first.to_string();
    Some(first.to_string())
}

/// The line under the model field when the name is a path: the readable name the app shows, and
/// that the full name is what the server receives. `None` when the name reads as it is.
pub fn model_name_note(model: &str) -> Option<String> {
    let label = crate::engine::format::model_label(model.trim());
    (label != model.trim())
        .then(|| format!("Shown as “{label}”; the server receives the full name above."))
}

/// How many of the most recent messages the driver loads to assemble a prompt: enough to fill the
/// budget with short messages (about 16 tokens each), never fewer than twice N, at most 2,000.
pub fn history_load_limit(config: &MemoryConfig) -> usize {
    let budget = config
        .context_tokens
        .saturating_sub(config.reply_reserve_tokens) as usize;
    (budget / 16).clamp(config.recent_messages.saturating_mul(2).max(20), 2000)
}

// ---- credentials -----------------------------------------------------------------------------

/// What a request to an endpoint does with its API key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyUse {
    /// There is no key: the request goes without one.
    NoKey,
    /// The key was given for this URL's origin, and the way there is safe: send it.
    Send(String),
    /// The key was given for another origin: it is not sent here, and the user is asked for this
    /// endpoint's key.
    OtherOrigin {
        key_origin: String,
        url_origin: String,
    },
    /// The key would travel over plain `http://` to another machine: refused, with an error before
    /// any request.
    Insecure { host: String },
}

/// The origin of an `http(s)` URL: `scheme://host[:port]`, scheme and host lowercased, the default
/// port (80, 443) left out, any `user:password@` dropped. `None` for anything else.
pub fn origin_of(url: &str) -> Option<String> {
    let url = url.trim();
    let (scheme, rest) = url.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    let default_port = match scheme.as_str() {
        "http" => "80",
        "https" => "443",
        _ => return None,
    };
    let authority = rest.split(['/', '?', '#', '\\']).next().unwrap_or("");
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let (host, port) = split_host_port(authority);
    if host.is_empty() {
        return None;
    }
    let host = host.to_ascii_lowercase();
    let host = if host.contains(':') {
        format!("[{host}]")
    } else {
        host
    };
    Some(match port.filter(|p| !p.is_empty() && *p != default_port) {
        Some(p) => format!("{scheme}://{host}:{p}"),
        None => format!("{scheme}://{host}"),
    })
}

/// `host` and `port` of an authority (`[::1]:8080`, `example.com:443`, `example.com`).
fn split_host_port(authority: &str) -> (&str, Option<&str>) {
    if let Some(stripped) = authority.strip_prefix('[') {
        return match stripped.split_once(']') {
            Some((h, p)) => (h, p.strip_prefix(':')),
            None => (stripped, None),
        };
    }
    match authority.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (authority, None),
    }
}

/// Whether `host` (as in an origin, IPv6 in brackets) is this machine: `localhost` and its
/// subdomains, `127.0.0.0/8`, `::1`. A LAN address is not: a key to it crosses the network.
pub fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host == "localhost" || host.ends_with(".localhost") || host == "::1" {
        return true;
    }
    let octets: Vec<u8> = host.split('.').filter_map(|p| p.parse().ok()).collect();
    octets.len() == 4 && host.split('.').count() == 4 && octets[0] == 127
}

/// What a request to `endpoint` does with its key (see the module's credential rules). A key not
/// bound yet (empty `key_origin`) counts as given for the URL's origin.
pub fn key_use(endpoint: &EndpointProfile) -> KeyUse {
    let key = endpoint
        .api_key
        .as_deref()
        .map(str::trim)
        .filter(|k| !k.is_empty());
    let Some(key) = key else {
        return KeyUse::NoKey;
    };
    let url_origin = origin_of(&endpoint.base_url).unwrap_or_default();
    let bound = endpoint.key_origin.trim();
    if !bound.is_empty() && !bound.eq_ignore_ascii_case(&url_origin) {
        return KeyUse::OtherOrigin {
            key_origin: bound.to_string(),
            url_origin,
        };
    }
    if let Some(host) = insecure_host(&url_origin) {
        return KeyUse::Insecure { host };
    }
    KeyUse::Send(key.to_string())
}

/// The host of `url` when `url` is plain `http://` to a host other than this machine, where no
/// credential may go (an API key here, the sync password in `sync::origin`); `None` for https, a
/// loopback host, or what is not an http(s) URL.
pub fn insecure_host(url: &str) -> Option<String> {
    let origin = origin_of(url)?;
    let host = split_host_port(origin.strip_prefix("http://")?).0;
    (!is_loopback(host)).then(|| host.to_string())
}

/// The error of a key that would go over plain http to another machine.
pub fn insecure_message(what: &str, host: &str) -> String {
    format!(
        "The {what} would travel unencrypted (plain http://) to {host}, so it is not sent. Use an \
         https:// address for this endpoint, or clear the key: only a server on this machine \
         (localhost, 127.0.0.1) may take a key over http://."
    )
}

/// What the form says next to a key field whose key was given for another origin; `None` when the
/// key is sent (or there is none).
pub fn key_note(endpoint: &EndpointProfile) -> Option<String> {
    match key_use(endpoint) {
        KeyUse::OtherOrigin {
            key_origin,
            url_origin,
        } => {
            let here = if url_origin.is_empty() {
                "this URL".to_string()
            } else {
                url_origin
            };
            Some(format!(
                "The saved key was entered for {key_origin}; it is not sent to {here}. Enter the \
                 key for this endpoint (saving without one removes the old key)."
            ))
        }
        _ => None,
    }
}

impl MemoryEndpoint {
    /// This endpoint's key as a profile would carry it (for [`key_use`] and [`key_note`]).
    pub fn as_profile(&self) -> EndpointProfile {
        EndpointProfile {
            base_url: self.base_url.clone(),
            protocol: self.protocol,
            api_key: self.api_key.clone(),
            key_origin: self.key_origin.clone(),
            ..EndpointProfile::default()
        }
    }
}

/// Binds an unbound key to `url`'s origin (a URL that has none leaves it unbound).
fn bind(key: &Option<String>, origin: &mut String, url: &str) {
    if key.is_some() && origin.trim().is_empty() {
        *origin = origin_of(url).unwrap_or_default();
    }
}

impl Settings {
    /// Binds each key not bound yet to its URL's origin.
    pub fn bind_keys(&mut self) {
        let e = &mut self.endpoint;
        bind(&e.api_key, &mut e.key_origin, &e.base_url);
        let m = &mut self.memory_endpoint;
        bind(&m.api_key, &mut m.key_origin, &m.base_url);
        if m.api_key.is_none() {
            m.key_origin.clear();
        }
        if self.endpoint.api_key.is_none() {
            self.endpoint.key_origin.clear();
        }
    }

    /// The settings as they are saved: keys bound to their URL's origin, and a key given for
    /// another origin than its URL's dropped (the user was asked for the new one).
    pub fn settle_keys(mut self) -> Settings {
        self.bind_keys();
        if matches!(key_use(&self.endpoint), KeyUse::OtherOrigin { .. }) {
            self.endpoint.api_key = None;
            self.endpoint.key_origin.clear();
        }
        if matches!(
            key_use(&self.memory_endpoint.as_profile()),
            KeyUse::OtherOrigin { .. }
        ) {
            self.memory_endpoint.api_key = None;
            self.memory_endpoint.key_origin.clear();
        }
        self
    }

    /// A key typed in the form: bound to the origin of the URL it is typed for.
    pub fn set_key(&mut self, memory: bool, typed: &str) {
        let key = (!typed.trim().is_empty()).then(|| typed.trim().to_string());
        let (slot, origin, url) = if memory {
            let m = &mut self.memory_endpoint;
            (&mut m.api_key, &mut m.key_origin, &m.base_url)
        } else {
            let e = &mut self.endpoint;
            (&mut e.api_key, &mut e.key_origin, &e.base_url)
        };
        *origin = match &key {
            Some(_) => origin_of(url).unwrap_or_default(),
            None => String::new(),
        };
        *slot = key;
    }
}
