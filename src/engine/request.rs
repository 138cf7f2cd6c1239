//! Request builders: one per protocol, from an [`EndpointProfile`], a protocol-neutral [`Prompt`]
//! and [`RequestOptions`] to a plain [`HttpRequest`] (method, url, headers, JSON body) that the
//! transport sends as is. Also the optional model list (`models_request`, `parse_models`) and a
//! llama.cpp server's `/props` (`props_request`, read by `engine::slots`).
//! Must not import anything outside `crate::engine`.
//!
//! # Base URL rule
//! Whitespace and trailing slashes are trimmed, and a pasted endpoint path is removed
//! (`/chat/completions`, `/responses`, `/models`, `/api/chat`, `/api/tags`, `/v1/messages`...). Then:
//! - `openai-chat`, `openai-responses`: a base with no path at all (`http://localhost:8080`) gets
//!   `/v1`; a base with a path is used as typed (`https://api.openai.com/v1`,
//!   `https://openrouter.ai/api/v1`, `http://host/openai/v1`). So `http://localhost:8080` and
//!   `http://localhost:8080/v1` both reach `http://localhost:8080/v1/chat/completions`.
//! - `ollama`: `/v1` or `/api` typed at the end is removed, then `/api/chat` (`/api/tags`) is added.
//! - `anthropic`: `/v1` typed at the end is removed, then `/v1/messages` (`/v1/models`) is added.
//!
//! # Keys
//! The key goes in the protocol's header (`Authorization: Bearer`, anthropic's `x-api-key`) only
//! when `engine::settings::key_use` says `Send`: given for this URL's origin, and not over plain
//! http to another machine. A key of another origin is left out (the settings form asks for it);
//! one that would travel unencrypted makes [`build`] and [`models_request`] fail before any request.
//!
//! # Message rules
//! The system prompt goes first (openai-chat, ollama), into `instructions` (openai-responses), or
//! into the top-level `system` (anthropic, together with any system-role messages, because the
//! Messages API has no system role). Tool-role messages carry no tool-call id, so they are sent as
//! user messages prefixed `Tool result:` (ollama keeps its native `tool` role). For anthropic,
//! empty messages are skipped, consecutive messages of one role are joined, and a history that opens
//! with the assistant gets a short user opener, because the API wants alternating turns starting
//! with the user. Temperatures are sent as typed (shortest decimal), clamped to 0..=1 for anthropic.
//!
//! # Images
//! A message's images (`WireMessage::images`, their base64 filled by the driver) go in each
//! protocol's own form, the text as a part beside them: `openai-chat` content parts
//! `{type: "text"}` then `{type: "image_url", image_url: {url: "data:<mime>;base64,…"}}`;
//! `openai-responses` `{type: "input_text"}` then `{type: "input_image", image_url: "data:…"}`;
//! `anthropic` `{type: "image", source: {type: "base64", media_type, data}}` then `{type: "text"}`;
//! `ollama` `images: [base64, …]` on the message. A message without images keeps its plain string
//! content; an image whose bytes are not on this device goes as `[image: name]` in the text.
//!
//! # Reply cap
//! Every chat request carries the reply cap ([`chat_options`], [`reply_cap`]): the room Settings
//! keep for the reply (`MemoryConfig::reply_reserve_tokens`), in each protocol's field: openai-chat
//! `max_tokens`, openai-responses `max_output_tokens`, ollama `options.num_predict`, anthropic
//! `max_tokens` (with thinking on, the thinking budget plus the cap, [`build_with_reasoning`]). A
//! reply cut by it is marked capped, not failed (`engine::turn::capped_by`). OpenAI's own reasoning
//! models refuse `max_tokens` on `/chat/completions` (they want `max_completion_tokens`); the
//! servers this app is mostly used with (llama.cpp, llama-cpp-python, vLLM, LM Studio, Ollama's
//! `/v1`) read `max_tokens`, so that is what goes out.
//!
//! # Output constraints
//! [`RequestOptions::output`] asks the server to generate JSON that matches a schema, in one of the
//! [`OutputForm`]s each protocol's servers take: `response_format` `json_schema` (OpenAI, llama.cpp's
//! `llama-server`, vLLM, LM Studio) or `json_object` + `schema` (llama-cpp-python's server) for
//! `openai-chat`; `format: <schema>` for `ollama`; one forced tool (`tools` + `tool_choice`) for
//! `anthropic`, whose arguments then stream as `input_json_delta`; `text.format` for
//! `openai-responses`. Which form to try, and what to do when a server refuses one, is the memory
//! protocol's decision (`engine::memory::form`).
//!
//! # Tools
//! [`build_with_tools`] offers tools ([`ToolRequest::defs`]) and carries the turn's rounds of
//! calls and results so far ([`ToolRequest::steps`], after the prompt's messages), each protocol in
//! its own form; with neither, the request is byte for byte [`build_with_reasoning`]'s. A tool goes
//! by its wire name (`engine::tools::wire_names`: the characters and length the protocols take,
//! unique in the request).
//! - `openai-chat`: `tools: [{type: "function", function: {name, description, parameters}}]`; a
//!   round is the assistant message `{role: "assistant", content (null when empty), tool_calls:
//!   [{id, type: "function", function: {name, arguments}}]}` (arguments as a JSON string), then
//!   one `{role: "tool", tool_call_id, content}` per call (OpenAI's function-calling guide and
//!   Chat Completions reference).
//! - `openai-responses`: `tools: [{type: "function", name, description, parameters}]` (no
//!   `function` wrapper); a round is the reply's text as an assistant message (when it has one),
//!   its input items `{type: "function_call", call_id, name, arguments}`, then
//!   `{type: "function_call_output", call_id, output}` (the Responses API reference,
//!   `ResponseInputItem.FunctionCallOutput`: `call_id`, `output`). The calls go in the input
//!   whole, so no `previous_response_id` is needed for them (reasoning items are not sent back).
//! - `anthropic`: `tools: [{name, description, input_schema}]` (the forced tool of an output
//!   schema, when one is set, instead); a round is an assistant message whose content is its text
//!   block (when it has one) then `{type: "tool_use", id, name, input}` blocks (`input` an object:
//!   arguments that are not a JSON object go as `{}`), then a user message of
//!   `{type: "tool_result", tool_use_id, content, is_error: true}` blocks (`is_error` only for a
//!   call that failed, was denied or did not run) (Anthropic's tool-use docs).
//! - `ollama`: `tools` as openai-chat's; a round is `{role: "assistant", content, tool_calls:
//!   [{function: {name, arguments}}]}` (arguments an object, no id), then one `{role: "tool",
//!   content, tool_name}` per call (Ollama's `docs/api.md`, "Chat request (with history, with
//!   tools)").
//!
//! A stored reply of the history that made calls (`WireMessage::tool_calls`, re-injected) goes
//! the same way, as one round of its calls and their results (a call that did not run with the
//! words of its status, so every protocol's pairing of call and result holds), then its text as an
//! assistant message of its own when it has any; for anthropic its messages join their same-role
//! neighbours as any other. A history without calls goes out byte for byte as before.
//!
//! A result goes as `engine::tools::model_text` writes it: wrapped and marked as data, not
//! instructions. Not carried: reasoning items (Responses) and thinking blocks with their
//! signatures (Anthropic, which wants them before a round's `tool_use` blocks when thinking is on):
//! the decoders keep neither, so a tool round with Anthropic thinking on may be refused.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::engine::model::{
    EndpointProfile, MemoryConfig, Prompt, Protocol, ReasoningEffort, Role, WireImage, WireMessage,
};
use crate::engine::settings::{insecure_message, key_use, KeyUse};
use crate::engine::slots::SlotUse;
use crate::engine::tools::{model_text, wire_names, ToolDef, ToolStep};

/// `max_tokens` for anthropic when the caller gives none (the API requires one).
pub const ANTHROPIC_DEFAULT_MAX_TOKENS: u32 = 4096;
/// `anthropic-version` header value.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
/// Prefix of a tool-role message sent in a protocol without a usable tool role.
pub const TOOL_RESULT_PREFIX: &str = "Tool result:\n";
/// The user turn put before a history that opens with the assistant (anthropic).
pub const ANTHROPIC_OPENER: &str = "(conversation continues)";

/// The smallest reply cap a chat request carries, whatever Settings say (a cap of 0 would ask
/// for nothing).
pub const MIN_REPLY_CAP: u32 = 16;

/// The reply cap of a chat request: the room `config` keeps for the reply, at least
/// [`MIN_REPLY_CAP`].
pub fn reply_cap(config: &MemoryConfig) -> u32 {
    config.reply_reserve_tokens.max(MIN_REPLY_CAP)
}

/// The options of a chat turn's request: streamed, capped at `cap` tokens of reply, continuing
/// `previous_response_id` when the turn resumes a remote session.
pub fn chat_options(cap: u32, previous_response_id: Option<String>) -> RequestOptions {
    RequestOptions {
        temperature: None,
        max_tokens: Some(cap),
        previous_response_id,
        stream: true,
        output: None,
        slot: None,
    }
}

/// Per-request knobs.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RequestOptions {
    pub temperature: Option<f32>,
    pub max_tokens: Option<u32>,
    /// Continue this remote session (openai-responses only): `input` is then only the new message.
    pub previous_response_id: Option<String>,
    pub stream: bool,
    /// Constrain the reply to JSON matching a schema (see the module docs).
    pub output: Option<OutputSchema>,
    /// A llama.cpp server's cache and slot (`engine::slots`): `cache_prompt` and `id_slot`,
    /// openai-chat only (the other protocols' bodies have no such fields).
    pub slot: Option<SlotUse>,
}

/// How a request carries an output schema. Each protocol takes some of these (see
/// [`OutputForm::protocol`]); a form another protocol's body has no field for is ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputForm {
    /// `openai-chat`: `response_format: {"type": "json_schema", "json_schema": {name, strict, schema}}`.
    JsonSchema,
    /// `openai-chat`: `response_format: {"type": "json_object", "schema": …}` (llama-cpp-python).
    JsonObject,
    /// `ollama`: `format: <schema>`.
    OllamaFormat,
    /// `anthropic`: `tools: [{name, description, input_schema}]` + `tool_choice: {"type": "tool", name}`.
    ForcedTool,
    /// `openai-responses`: `text: {"format": {"type": "json_schema", name, strict, schema}}`.
    ResponsesFormat,
}

impl OutputForm {
    /// The protocol whose request body carries this form.
    pub fn protocol(self) -> Protocol {
        match self {
            OutputForm::JsonSchema | OutputForm::JsonObject => Protocol::OpenAiChat,
            OutputForm::OllamaFormat => Protocol::Ollama,
            OutputForm::ForcedTool => Protocol::Anthropic,
            OutputForm::ResponsesFormat => Protocol::OpenAiResponses,
        }
    }
}

/// A JSON schema the reply must follow, and how to send it.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputSchema {
    pub form: OutputForm,
    /// The schema's (or forced tool's) name: letters, digits, `_` and `-` only.
    pub name: String,
    /// What the output is for (the forced tool's description).
    pub description: String,
    /// A JSON schema (JSON text) that satisfies OpenAI's strict mode.
    pub schema: String,
}

impl OutputSchema {
    /// The field this schema fills in `form`'s body, as JSON text (the schema's own text is kept as
    /// is: the order of its properties is the order a constrained server generates them in).
    fn field_for(&self, form: OutputForm) -> Option<Box<RawValue>> {
        if self.form != form {
            return None;
        }
        let name = to_json(&self.name);
        let schema = &self.schema;
        let text = match form {
            OutputForm::JsonSchema => format!(
                r#"{{"type":"json_schema","json_schema":{{"name":{name},"strict":true,"schema":{schema}}}}}"#
            ),
            OutputForm::JsonObject => format!(r#"{{"type":"json_object","schema":{schema}}}"#),
            OutputForm::OllamaFormat => schema.clone(),
            OutputForm::ResponsesFormat => format!(
                r#"{{"format":{{"type":"json_schema","name":{name},"strict":true,"schema":{schema}}}}}"#
            ),
            OutputForm::ForcedTool => format!(
                r#"[{{"name":{name},"description":{},"input_schema":{schema}}}]"#,
                to_json(&self.description)
            ),
        };
        RawValue::from_string(text).ok()
    }
}

fn output_field(opts: &RequestOptions, form: OutputForm) -> Option<Box<RawValue>> {
    opts.output.as_ref().and_then(|o| o.field_for(form))
}

/// A request ready for `fetch`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    /// JSON text; empty for GET.
    pub body: String,
}

/// Why a model list could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelsError {
    #[error("The endpoint's model list is not JSON; check the endpoint URL and protocol.")]
    NotJson,
    #[error("The endpoint's model list has an unexpected shape (no {0}); check the protocol.")]
    Shape(&'static str),
}

/// Why a request was not built: its key would go where it must not (`engine::settings::key_use`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyRefused {
    #[error("{}", insecure_message("API key", .host))]
    Insecure { host: String },
}

/// What a request carries for tools (module header, "Tools"). The default carries nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct ToolRequest<'a> {
    /// The tools offered.
    pub defs: &'a [ToolDef],
    /// This turn's rounds so far: each reply's text and calls, with their results
    /// (`engine::tools::ToolAction::Send`).
    pub steps: &'a [ToolStep],
}

/// Builds the streaming (or not) chat request for the endpoint's protocol. The key goes only to
/// the origin it was given for; one that would go over plain http to another machine is an error.
pub fn build(
    endpoint: &EndpointProfile,
    prompt: &Prompt,
    opts: &RequestOptions,
) -> Result<HttpRequest, KeyRefused> {
    build_carrying(endpoint, prompt, opts, ToolRequest::default())
}

/// [`build`] with tools (module header, "Tools").
fn build_carrying(
    endpoint: &EndpointProfile,
    prompt: &Prompt,
    opts: &RequestOptions,
    tools: ToolRequest<'_>,
) -> Result<HttpRequest, KeyRefused> {
    let auth = auth_headers(endpoint)?;
    let body = match endpoint.protocol {
        Protocol::OpenAiChat => openai_chat_body(endpoint, prompt, opts, tools),
        Protocol::OpenAiResponses => openai_responses_body(endpoint, prompt, opts, tools),
        Protocol::Ollama => ollama_body(endpoint, prompt, opts, tools),
        Protocol::Anthropic => anthropic_body(endpoint, prompt, opts, tools),
    };
    let url = match endpoint.protocol {
        Protocol::OpenAiChat => format!("{}/chat/completions", openai_base(&endpoint.base_url)),
        Protocol::OpenAiResponses => format!("{}/responses", openai_base(&endpoint.base_url)),
        Protocol::Ollama => format!("{}/api/chat", ollama_base(&endpoint.base_url)),
        Protocol::Anthropic => format!("{}/v1/messages", anthropic_base(&endpoint.base_url)),
    };
    let mut headers = vec![("Content-Type".to_string(), "application/json".to_string())];
    headers.extend(auth);
    Ok(HttpRequest {
        method: "POST".into(),
        url,
        headers,
        body,
    })
}

/// [`build`], asking a reasoning model for `effort` when one is set (with `None` the request is
/// exactly [`build`]'s). Each protocol in its own field: openai-chat `reasoning_effort`,
/// openai-responses `reasoning: {effort, summary: "auto"}` (so its reasoning summary streams),
/// anthropic `thinking: {type: "enabled", budget_tokens}` (with `max_tokens` the budget plus the
/// reply's cap, [`ANTHROPIC_DEFAULT_MAX_TOKENS`] when none is given, since the API wants it above the
/// budget, and no `temperature`, which thinking does not allow), ollama
/// `think: true`.
pub fn build_with_reasoning(
    endpoint: &EndpointProfile,
    prompt: &Prompt,
    opts: &RequestOptions,
    effort: Option<ReasoningEffort>,
) -> Result<HttpRequest, KeyRefused> {
    build_with_tools(endpoint, prompt, opts, effort, ToolRequest::default())
}

/// [`build_with_reasoning`] offering `tools.defs` and carrying `tools.steps` in the protocol's
/// own form (module header, "Tools"); with neither, exactly [`build_with_reasoning`]'s request.
pub fn build_with_tools(
    endpoint: &EndpointProfile,
    prompt: &Prompt,
    opts: &RequestOptions,
    effort: Option<ReasoningEffort>,
    tools: ToolRequest<'_>,
) -> Result<HttpRequest, KeyRefused> {
    let Some(effort) = effort else {
        return build_carrying(endpoint, prompt, opts, tools);
    };
    let mut opts = opts.clone();
    let field = match endpoint.protocol {
        Protocol::OpenAiChat => format!(r#""reasoning_effort":"{}""#, effort.as_str()),
        Protocol::OpenAiResponses => format!(
            r#""reasoning":{{"effort":"{}","summary":"auto"}}"#,
            effort.as_str()
        ),
        Protocol::Anthropic => {
            let budget = effort.anthropic_budget();
            let reply = opts.max_tokens.unwrap_or(ANTHROPIC_DEFAULT_MAX_TOKENS);
            opts.max_tokens = Some(budget.saturating_add(reply));
            opts.temperature = None;
            format!(r#""thinking":{{"type":"enabled","budget_tokens":{budget}}}"#)
        }
        Protocol::Ollama => r#""think":true"#.to_string(),
    };
    let mut req = build_carrying(endpoint, prompt, &opts, tools)?;
    // Every body is one JSON object: the field goes in before its closing brace.
    if let Some(open) = req.body.strip_suffix('}') {
        req.body = format!("{open},{field}}}");
    }
    Ok(req)
}

/// `GET` for the endpoint's model list: `{base}/models` (openai-style), `/api/tags` (ollama),
/// `/v1/models` (anthropic). The key as in [`build`].
pub fn models_request(endpoint: &EndpointProfile) -> Result<HttpRequest, KeyRefused> {
    let url = match endpoint.protocol {
        Protocol::OpenAiChat | Protocol::OpenAiResponses => {
            format!("{}/models", openai_base(&endpoint.base_url))
        }
        Protocol::Ollama => format!("{}/api/tags", ollama_base(&endpoint.base_url)),
        Protocol::Anthropic => format!("{}/v1/models", anthropic_base(&endpoint.base_url)),
    };
    Ok(HttpRequest {
        method: "GET".into(),
        url,
        headers: auth_headers(endpoint)?,
        body: String::new(),
    })
}

/// `GET` for what a llama.cpp server says about itself (`engine::slots`): `/props` at the server's
/// root (the openai base without its `/v1`); openai-chat only, `None` for the other protocols. The
/// key as in [`build`].
pub fn props_request(endpoint: &EndpointProfile) -> Option<Result<HttpRequest, KeyRefused>> {
    if endpoint.protocol != Protocol::OpenAiChat {
        return None;
    }
    let base = openai_base(&endpoint.base_url);
    let root = base.strip_suffix("/v1").unwrap_or(&base);
    Some(auth_headers(endpoint).map(|headers| HttpRequest {
        method: "GET".into(),
        url: format!("{root}/props"),
        headers,
        body: String::new(),
    }))
}

/// Model names from a model-list body: `data[].id` (openai-style, anthropic) or `models[].name`
/// (ollama). Server order, duplicates and empty names removed.
pub fn parse_models(protocol: Protocol, body: &str) -> Result<Vec<String>, ModelsError> {
    let value: Value = serde_json::from_str(body).map_err(|_| ModelsError::NotJson)?;
    let (list_key, name_keys): (&'static str, &[&str]) = match protocol {
        Protocol::Ollama => ("models", &["name", "model"]),
        _ => ("data", &["id"]),
    };
    let list = value
        .get(list_key)
        .and_then(Value::as_array)
        .ok_or(ModelsError::Shape(list_key))?;
    let mut names: Vec<String> = Vec::with_capacity(list.len());
    for item in list {
        let name = name_keys
            .iter()
            .find_map(|k| item.get(*k).and_then(Value::as_str))
            .map(str::trim)
            .filter(|n| !n.is_empty());
        if let Some(name) = name {
            if !names.iter().any(|n| n == name) {
                names.push(name.to_string());
            }
        }
    }
    Ok(names)
}

/// The protocol's headers, with the key only where [`key_use`] says it may go.
fn auth_headers(endpoint: &EndpointProfile) -> Result<Vec<(String, String)>, KeyRefused> {
    let key = match key_use(endpoint) {
        KeyUse::Send(key) => Some(key),
        KeyUse::NoKey | KeyUse::OtherOrigin { .. } => None,
        KeyUse::Insecure { host } => return Err(KeyRefused::Insecure { host }),
    };
    let key = key.as_deref();
    let mut headers = Vec::new();
    match endpoint.protocol {
        Protocol::Anthropic => {
            if let Some(key) = key {
                headers.push(("x-api-key".to_string(), key.to_string()));
            }
            headers.push(("anthropic-version".into(), ANTHROPIC_VERSION.into()));
            headers.push((
                "anthropic-dangerous-direct-browser-access".into(),
                "true".into(),
            ));
        }
        _ => {
            if let Some(key) = key {
                headers.push(("Authorization".to_string(), format!("Bearer {key}")));
            }
        }
    }
    Ok(headers)
}

// ---- base URLs -------------------------------------------------------------------------------

fn trim_base(base: &str) -> &str {
    base.trim().trim_end_matches('/')
}

/// Removes the first of `suffixes` the base ends with (ASCII case-insensitive), then trailing slashes.
fn strip_suffixes<'a>(mut base: &'a str, suffixes: &[&str]) -> &'a str {
    for suffix in suffixes {
        let n = suffix.len();
        if base.len() >= n
            && base.is_char_boundary(base.len() - n)
            && base[base.len() - n..].eq_ignore_ascii_case(suffix)
        {
            base = base[..base.len() - n].trim_end_matches('/');
        }
    }
    base
}

fn has_path(base: &str) -> bool {
    let rest = base.split_once("://").map_or(base, |(_, rest)| rest);
    rest.contains('/')
}

/// The openai-style base, ending in `/v1` unless the user typed another path.
pub fn openai_base(base: &str) -> String {
    let base = strip_suffixes(
        trim_base(base),
        &["/chat/completions", "/responses", "/models"],
    );
    if has_path(base) {
        base.to_string()
    } else {
        format!("{base}/v1")
    }
}

/// The ollama server root.
pub fn ollama_base(base: &str) -> String {
    strip_suffixes(
        trim_base(base),
        &["/api/chat", "/api/tags", "/api", "/chat/completions", "/v1"],
    )
    .to_string()
}

/// The anthropic server root (without `/v1`).
pub fn anthropic_base(base: &str) -> String {
    strip_suffixes(trim_base(base), &["/messages", "/models", "/v1"]).to_string()
}

// ---- bodies ----------------------------------------------------------------------------------

/// An f32 as the decimal the user typed (0.7, not 0.699999988079071).
fn decimal(t: f32) -> Option<f64> {
    t.is_finite()
        .then(|| serde_json::from_str::<f64>(&t.to_string()).ok())
        .flatten()
}

#[derive(Serialize)]
struct Msg<'a> {
    role: &'static str,
    content: Content<'a>,
    /// Ollama's images: base64, on the message.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    images: Vec<&'a str>,
}

/// A message's content: its text, or (a message with images) the protocol's content parts.
#[derive(Serialize)]
#[serde(untagged)]
enum Content<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<Value>),
}

impl Content<'_> {
    fn is_blank(&self) -> bool {
        match self {
            Content::Text(t) => t.trim().is_empty(),
            Content::Parts(p) => p.is_empty(),
        }
    }
}

/// How a protocol takes images in a message (module header, "Images").
#[derive(Clone, Copy, PartialEq)]
enum ImageForm {
    OpenAiChat,
    Responses,
    Anthropic,
}

fn text_part(form: ImageForm, text: &str) -> Value {
    let kind = if form == ImageForm::Responses {
        "input_text"
    } else {
        "text"
    };
    serde_json::json!({ "type": kind, "text": text })
}

fn image_part(form: ImageForm, i: &WireImage) -> Value {
    let url = format!("data:{};base64,{}", i.mime, i.data);
    match form {
        ImageForm::OpenAiChat => {
            serde_json::json!({ "type": "image_url", "image_url": { "url": url } })
        }
        ImageForm::Responses => serde_json::json!({ "type": "input_image", "image_url": url }),
        ImageForm::Anthropic => serde_json::json!({
            "type": "image",
            "source": { "type": "base64", "media_type": i.mime, "data": i.data }
        }),
    }
}

/// `text` followed by the `[image: name]` of each image whose bytes are not here (not stored on
/// this device): the model is told an image was there.
fn with_missing<'a>(text: Cow<'a, str>, images: &[WireImage]) -> Cow<'a, str> {
    let missing: Vec<&WireImage> = images.iter().filter(|i| i.data.is_empty()).collect();
    if missing.is_empty() {
        return text;
    }
    let mut t = text.into_owned();
    for i in missing {
        if !t.is_empty() {
            t.push(' ');
        }
        t.push_str(&format!("[image: {}]", i.name));
    }
    Cow::Owned(t)
}

/// The content of `m` with its images in `form`: text alone when it has none (or none is here);
/// else the parts, images first for anthropic (its advice), after the text for OpenAI.
fn content_with_images<'a>(
    form: ImageForm,
    text: Cow<'a, str>,
    images: &'a [WireImage],
) -> Content<'a> {
    let text = with_missing(text, images);
    let present: Vec<&WireImage> = images.iter().filter(|i| !i.data.is_empty()).collect();
    if present.is_empty() {
        return Content::Text(text);
    }
    let mut parts: Vec<Value> = present.iter().map(|i| image_part(form, i)).collect();
    if !text.trim().is_empty() {
        let t = text_part(form, &text);
        if form == ImageForm::Anthropic {
            parts.push(t);
        } else {
            parts.insert(0, t);
        }
    }
    Content::Parts(parts)
}

/// A wire message with the tool role folded into `user` (protocols without a usable tool role),
/// its images in `form`.
fn msg_in(form: ImageForm, m: &WireMessage) -> Msg<'_> {
    let (role, text) = match m.role {
        Role::Tool => (
            "user",
            Cow::Owned(format!("{TOOL_RESULT_PREFIX}{}", m.content)),
        ),
        role => (role.as_str(), Cow::Borrowed(m.content.as_str())),
    };
    Msg {
        role,
        content: content_with_images(form, text, &m.images),
        images: Vec::new(),
    }
}

fn plain_msg(m: &WireMessage) -> Msg<'_> {
    msg_in(ImageForm::OpenAiChat, m)
}

fn responses_msg(m: &WireMessage) -> Msg<'_> {
    msg_in(ImageForm::Responses, m)
}

/// Ollama: the tool role kept, images as base64 on the message (`images`).
fn ollama_msg(m: &WireMessage) -> Msg<'_> {
    Msg {
        role: m.role.as_str(),
        content: Content::Text(with_missing(Cow::Borrowed(&m.content), &m.images)),
        images: m
            .images
            .iter()
            .filter(|i| !i.data.is_empty())
            .map(|i| i.data.as_str())
            .collect(),
    }
}

/// The system prompt (when there is one) then the prompt's messages, each through `convert`, a
/// stored reply's tool calls in `rounds`' form before its text ([`history_items`]).
fn with_system<'a>(
    prompt: &'a Prompt,
    convert: impl Fn(&'a WireMessage) -> Msg<'a>,
    rounds: impl Fn(&[ToolStep]) -> Vec<Value>,
) -> Vec<Item<'a>> {
    let mut out = Vec::with_capacity(prompt.messages.len() + 1);
    if !prompt.system.is_empty() {
        out.push(Item::Msg(Msg {
            role: "system",
            content: Content::Text(Cow::Borrowed(&prompt.system)),
            images: Vec::new(),
        }));
    }
    out.extend(history_items(&prompt.messages, convert, rounds));
    out
}

/// `messages` through `convert`; a reply that carries tool calls (a stored one, re-injected) goes
/// as one round in the protocol's form (`rounds`: the calls, then their results), then its text
/// as a message of its own when it has any. Without calls, exactly `convert`'s messages.
fn history_items<'a>(
    messages: &'a [WireMessage],
    convert: impl Fn(&'a WireMessage) -> Msg<'a>,
    rounds: impl Fn(&[ToolStep]) -> Vec<Value>,
) -> Vec<Item<'a>> {
    let mut out = Vec::with_capacity(messages.len());
    for m in messages {
        if let Some(step) = stored_round(m) {
            out.extend(rounds(&[step]).into_iter().map(Item::Raw));
            if m.content.trim().is_empty() && m.images.is_empty() {
                continue;
            }
        }
        out.push(Item::Msg(convert(m)));
    }
    out
}

/// The round a stored reply's calls make (no text: the reply's text follows them); `None` for a
/// message without calls.
fn stored_round(m: &WireMessage) -> Option<ToolStep> {
    (m.role == Role::Assistant && !m.tool_calls.is_empty()).then(|| ToolStep {
        text: String::new(),
        calls: m.tool_calls.clone(),
    })
}

#[derive(Serialize)]
struct IncludeUsage {
    include_usage: bool,
}

#[derive(Serialize)]
struct ChatBody<'a> {
    model: &'a str,
    messages: Vec<Item<'a>>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<IncludeUsage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<Box<RawValue>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_prompt: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id_slot: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<Box<RawValue>>,
}

fn openai_chat_body(
    endpoint: &EndpointProfile,
    prompt: &Prompt,
    opts: &RequestOptions,
    tools: ToolRequest<'_>,
) -> String {
    to_json(&ChatBody {
        model: &endpoint.model,
        messages: then_rounds(
            with_system(prompt, plain_msg, |s| chat_rounds(s, false)),
            chat_rounds(tools.steps, false),
        ),
        stream: opts.stream,
        stream_options: opts.stream.then_some(IncludeUsage {
            include_usage: true,
        }),
        temperature: opts.temperature.and_then(decimal),
        max_tokens: opts.max_tokens,
        response_format: output_field(opts, OutputForm::JsonSchema)
            .or_else(|| output_field(opts, OutputForm::JsonObject)),
        cache_prompt: opts.slot.map(|_| true),
        id_slot: opts.slot.and_then(|s| s.id_slot),
        tools: tool_defs(tools.defs, DefForm::Chat),
    })
}

#[derive(Serialize)]
struct ResponsesBody<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    instructions: Option<&'a str>,
    input: Vec<Item<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    previous_response_id: Option<&'a str>,
    store: bool,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<Box<RawValue>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<Box<RawValue>>,
}

fn openai_responses_body(
    endpoint: &EndpointProfile,
    prompt: &Prompt,
    opts: &RequestOptions,
    tools: ToolRequest<'_>,
) -> String {
    let previous = opts
        .previous_response_id
        .as_deref()
        .filter(|id| !id.is_empty());
    let input = match previous {
        // The server holds the earlier turns: send only the new message.
        Some(_) => {
            let last = prompt.messages.len().saturating_sub(1);
            history_items(&prompt.messages[last..], responses_msg, responses_rounds)
        }
        None => history_items(&prompt.messages, responses_msg, responses_rounds),
    };
    to_json(&ResponsesBody {
        model: &endpoint.model,
        // Instructions are not carried over by previous_response_id: always sent.
        instructions: Some(prompt.system.as_str()).filter(|s| !s.is_empty()),
        input: then_rounds(input, responses_rounds(tools.steps)),
        previous_response_id: previous,
        store: true,
        stream: opts.stream,
        temperature: opts.temperature.and_then(decimal),
        max_output_tokens: opts.max_tokens,
        text: output_field(opts, OutputForm::ResponsesFormat),
        tools: tool_defs(tools.defs, DefForm::Responses),
    })
}

#[derive(Serialize)]
struct OllamaOptions {
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    num_predict: Option<u32>,
}

#[derive(Serialize)]
struct OllamaBody<'a> {
    model: &'a str,
    messages: Vec<Item<'a>>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    format: Option<Box<RawValue>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    options: Option<OllamaOptions>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<Box<RawValue>>,
}

fn ollama_body(
    endpoint: &EndpointProfile,
    prompt: &Prompt,
    opts: &RequestOptions,
    tools: ToolRequest<'_>,
) -> String {
    let options = OllamaOptions {
        temperature: opts.temperature.and_then(decimal),
        num_predict: opts.max_tokens,
    };
    let has_options = options.temperature.is_some() || options.num_predict.is_some();
    to_json(&OllamaBody {
        model: &endpoint.model,
        messages: then_rounds(
            with_system(prompt, ollama_msg, |s| chat_rounds(s, true)),
            chat_rounds(tools.steps, true),
        ),
        stream: opts.stream,
        format: output_field(opts, OutputForm::OllamaFormat),
        options: has_options.then_some(options),
        tools: tool_defs(tools.defs, DefForm::Chat),
    })
}

#[derive(Serialize)]
struct AnthropicBody<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<Vec<Value>>,
    messages: Vec<Item<'a>>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<Box<RawValue>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
}

fn anthropic_body<'a>(
    endpoint: &'a EndpointProfile,
    prompt: &'a Prompt,
    opts: &'a RequestOptions,
    carried: ToolRequest<'_>,
) -> String {
    let mut system: Vec<&str> = Vec::new();
    if !prompt.system.trim().is_empty() {
        system.push(&prompt.system);
    }
    let mut messages: Vec<Msg> = Vec::with_capacity(prompt.messages.len() + 1);
    let mut add = |msg: Msg<'a>| match messages.last_mut() {
        Some(last) if last.role == msg.role => join(&mut last.content, msg.content),
        _ => messages.push(msg),
    };
    for m in &prompt.messages {
        if m.role == Role::System {
            if !m.content.trim().is_empty() {
                system.push(&m.content);
            }
            continue;
        }
        if let Some(step) = stored_round(m) {
            anthropic_rounds(&[step])
                .into_iter()
                .for_each(|r| add(round_msg(r)));
        }
        if m.content.trim().is_empty() && m.images.is_empty() {
            continue;
        }
        add(msg_in(ImageForm::Anthropic, m));
    }
    if messages.first().is_some_and(|m| m.role == "assistant") {
        messages.insert(
            0,
            Msg {
                role: "user",
                content: Content::Text(Cow::Borrowed(ANTHROPIC_OPENER)),
                images: Vec::new(),
            },
        );
    }
    mark_history_end(&mut messages);
    let forced = output_field(opts, OutputForm::ForcedTool);
    let offered = tool_defs(carried.defs, DefForm::Anthropic);
    to_json(&AnthropicBody {
        model: &endpoint.model,
        max_tokens: opts.max_tokens.unwrap_or(ANTHROPIC_DEFAULT_MAX_TOKENS),
        system: (!system.is_empty()).then(|| {
            vec![cached(text_part(
                ImageForm::Anthropic,
                &system.join("\n\n"),
            ))]
        }),
        messages: items(messages, anthropic_rounds(carried.steps)),
        stream: opts.stream,
        temperature: opts
            .temperature
            .map(|t| t.clamp(0.0, 1.0))
            .and_then(decimal),
        tool_choice: forced.as_ref().and(opts.output.as_ref()).map(|o| {
            let mut m = serde_json::Map::new();
            m.insert("type".into(), Value::from("tool"));
            m.insert("name".into(), Value::from(o.name.as_str()));
            Value::Object(m)
        }),
        tools: forced.or(offered),
    })
}

/// A content block with Anthropic's cache breakpoint: the prompt up to it may be read from the cache
/// (`engine::prefix` keeps it stable from turn to turn).
fn cached(mut block: Value) -> Value {
    if let Value::Object(m) = &mut block {
        m.insert(
            "cache_control".into(),
            serde_json::json!({"type": "ephemeral"}),
        );
    }
    block
}

/// Anthropic's second cache breakpoint, at the end of history: on the last block of the message
/// before the new one, when there is history (the system text carries the first).
fn mark_history_end(messages: &mut [Msg<'_>]) {
    let n = messages.len();
    if n < 2 {
        return;
    }
    let content = &mut messages[n - 2].content;
    let mut parts = match std::mem::replace(content, Content::Parts(Vec::new())) {
        Content::Text(t) => vec![text_part(ImageForm::Anthropic, &t)],
        Content::Parts(p) => p,
    };
    if let Some(last) = parts.pop() {
        parts.push(cached(last));
    }
    *content = Content::Parts(parts);
}

/// Anthropic's two same-role neighbours as one message: texts joined by a blank line, parts one
/// after the other.
fn join<'a>(into: &mut Content<'a>, next: Content<'a>) {
    let parts = |c: Content<'a>| -> Vec<Value> {
        match c {
            Content::Text(t) if t.trim().is_empty() => Vec::new(),
            Content::Text(t) => vec![text_part(ImageForm::Anthropic, &t)],
            Content::Parts(p) => p,
        }
    };
    if next.is_blank() {
        return;
    }
    match (&mut *into, next) {
        (Content::Text(a), Content::Text(b)) => {
            let a = a.to_mut();
            a.push_str("\n\n");
            a.push_str(&b);
        }
        (_, next) => {
            let mut all = parts(std::mem::replace(into, Content::Parts(Vec::new())));
            all.extend(parts(next));
            *into = Content::Parts(all);
        }
    }
}

// ---- tools (module header, "Tools") -----------------------------------------------------------

/// One entry of a body's messages (or input): a message as the protocol takes it, or an item of a
/// tool round. Untagged: each serialises as what it holds, so a body without rounds is the same
/// bytes as before tools existed.
#[derive(Serialize)]
#[serde(untagged)]
enum Item<'a> {
    Msg(Msg<'a>),
    Raw(Value),
}

fn items<'a>(messages: Vec<Msg<'a>>, rounds: Vec<Value>) -> Vec<Item<'a>> {
    messages
        .into_iter()
        .map(Item::Msg)
        .chain(rounds.into_iter().map(Item::Raw))
        .collect()
}

/// `items` followed by this turn's rounds.
fn then_rounds(mut items: Vec<Item<'_>>, rounds: Vec<Value>) -> Vec<Item<'_>> {
    items.extend(rounds.into_iter().map(Item::Raw));
    items
}

/// One message of an anthropic round ([`anthropic_rounds`]) as a typed message, so that it joins
/// its same-role neighbours of the history as any other does.
fn round_msg(round: Value) -> Msg<'static> {
    let role = match round.get("role").and_then(Value::as_str) {
        Some("assistant") => "assistant",
        _ => "user",
    };
    let parts = match round.get("content") {
        Some(Value::Array(p)) => p.clone(),
        _ => Vec::new(),
    };
    Msg {
        role,
        content: Content::Parts(parts),
        images: Vec::new(),
    }
}

/// How a protocol describes a tool.
#[derive(Clone, Copy, PartialEq)]
enum DefForm {
    /// openai-chat and ollama: `{type: "function", function: {name, description, parameters}}`.
    Chat,
    /// openai-responses: `{type: "function", name, description, parameters}`.
    Responses,
    /// anthropic: `{name, description, input_schema}`.
    Anthropic,
}

/// The schema text of `d` as sent: its own text when it is a JSON object (kept as written), else
/// an object schema without properties.
fn schema_text(d: &ToolDef) -> &str {
    let own = d.parameters.trim();
    let is_object = own.starts_with('{') && serde_json::from_str::<&RawValue>(own).is_ok();
    if is_object {
        own
    } else {
        r#"{"type":"object","properties":{}}"#
    }
}

/// The `tools` field for `defs` in `form`; `None` when there are none.
fn tool_defs(defs: &[ToolDef], form: DefForm) -> Option<Box<RawValue>> {
    if defs.is_empty() {
        return None;
    }
    let each: Vec<String> = defs
        .iter()
        .zip(wire_names(defs))
        .map(|(d, name)| {
            let (name, description) = (to_json(&name), to_json(&d.description));
            let schema = schema_text(d);
            match form {
                DefForm::Chat => format!(
                    r#"{{"type":"function","function":{{"name":{name},"description":{description},"parameters":{schema}}}}}"#
                ),
                DefForm::Responses => format!(
                    r#"{{"type":"function","name":{name},"description":{description},"parameters":{schema}}}"#
                ),
                DefForm::Anthropic => format!(
                    r#"{{"name":{name},"description":{description},"input_schema":{schema}}}"#
                ),
            }
        })
        .collect();
    RawValue::from_string(format!("[{}]", each.join(","))).ok()
}

/// A call's arguments as JSON text (an empty string, as a call without arguments streams, is `{}`).
fn arguments_text(arguments: &str) -> &str {
    if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    }
}

/// A call's arguments as an object (anthropic's `input`, ollama's `arguments`): anything that is
/// not a JSON object is `{}`.
fn arguments_object(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => Value::Object(serde_json::Map::new()),
    }
}

/// The rounds as openai-chat (`ollama`: false) or ollama messages.
fn chat_rounds(steps: &[ToolStep], ollama: bool) -> Vec<Value> {
    let mut out = Vec::new();
    for step in steps {
        let calls: Vec<Value> = step
            .calls
            .iter()
            .map(|c| {
                if ollama {
                    serde_json::json!({
                        "function": { "name": c.name, "arguments": arguments_object(&c.arguments) }
                    })
                } else {
                    serde_json::json!({
                        "id": c.id,
                        "type": "function",
                        "function": { "name": c.name, "arguments": arguments_text(&c.arguments) }
                    })
                }
            })
            .collect();
        let content = if ollama || !step.text.trim().is_empty() {
            Value::from(step.text.as_str())
        } else {
            Value::Null
        };
        out.push(
            serde_json::json!({ "role": "assistant", "content": content, "tool_calls": calls }),
        );
        for c in &step.calls {
            let (text, _) = model_text(c);
            out.push(if ollama {
                serde_json::json!({ "role": "tool", "content": text, "tool_name": c.name })
            } else {
                serde_json::json!({ "role": "tool", "tool_call_id": c.id, "content": text })
            });
        }
    }
    out
}

/// The rounds as openai-responses input items.
fn responses_rounds(steps: &[ToolStep]) -> Vec<Value> {
    let mut out = Vec::new();
    for step in steps {
        if !step.text.trim().is_empty() {
            out.push(serde_json::json!({ "role": "assistant", "content": step.text }));
        }
        for c in &step.calls {
            out.push(serde_json::json!({
                "type": "function_call",
                "call_id": c.id,
                "name": c.name,
                "arguments": arguments_text(&c.arguments)
            }));
        }
        for c in &step.calls {
            let (text, _) = model_text(c);
            out.push(serde_json::json!({
                "type": "function_call_output", "call_id": c.id, "output": text
            }));
        }
    }
    out
}

/// The rounds as anthropic messages: the assistant's text and `tool_use` blocks, then the user's
/// `tool_result` blocks.
fn anthropic_rounds(steps: &[ToolStep]) -> Vec<Value> {
    let mut out = Vec::new();
    for step in steps {
        let mut blocks = Vec::new();
        if !step.text.trim().is_empty() {
            blocks.push(text_part(ImageForm::Anthropic, step.text.trim_end()));
        }
        for c in &step.calls {
            blocks.push(serde_json::json!({
                "type": "tool_use", "id": c.id, "name": c.name,
                "input": arguments_object(&c.arguments)
            }));
        }
        out.push(serde_json::json!({ "role": "assistant", "content": blocks }));
        let results: Vec<Value> = step
            .calls
            .iter()
            .map(|c| {
                let (text, is_error) = model_text(c);
                let mut block = serde_json::json!({
                    "type": "tool_result", "tool_use_id": c.id, "content": text
                });
                if is_error {
                    block["is_error"] = Value::Bool(true);
                }
                block
            })
            .collect();
        out.push(serde_json::json!({ "role": "user", "content": results }));
    }
    out
}

fn to_json<T: Serialize>(body: &T) -> String {
    // Serialising these plain structs (strings, numbers, bools) cannot fail.
    serde_json::to_string(body).unwrap_or_default()
}
