//! How a memory update asks for its reply: the JSON schema of the update ([`update_schema`]), the
//! forms each protocol can carry it in, best first ([`forms_for`]), which form to start with given
//! the one remembered for the endpoint ([`start_form`]), and whether an error means "this server
//! does not take this form" so the same update is retried once with the next one ([`refused_http`],
//! [`refused_stream`], [`next_form`]).
//! Must not import anything outside `crate::engine` (serde_json is a crate dependency).
//!
//! Order per protocol (ARCHITECTURE.md, "Memory update"):
//! - `openai-chat`: `json_schema` (OpenAI, llama.cpp's `llama-server`, vLLM, LM Studio), then
//!   `json_object` + `schema` (llama-cpp-python's server), then the two-section text;
//! - `ollama`: `format: <schema>`, then text; `anthropic`: a forced tool, then text;
//!   `openai-responses`: `text.format`, then text.
//!
//! A refusal is an HTTP error (a 4xx other than auth, not-found, timeout, size and rate limits, or a
//! 500/501) or a stream error event whose text names the form's field or value. Anything else (a
//! wrong key, a server that is down, a model that is not there) is a failure of the update, not of
//! the form, and is not retried.

use crate::engine::decode::StreamError;
use crate::engine::model::Protocol;
use crate::engine::request::{OutputForm, OutputSchema};

/// The schema's name (and the forced tool's).
pub const SCHEMA_NAME: &str = "memory_update";
/// The forced tool's description (anthropic).
pub const TOOL_DESCRIPTION: &str =
    "Record the updated long-term memory of the conversation: the summary and the entities.";
/// Most entities one update may list (the schema's `maxItems`).
pub const SCHEMA_MAX_ENTITIES: u32 = 12;
/// Most aliases, properties and relationships per entity in the schema.
pub const SCHEMA_MAX_LIST: u32 = 6;
/// Most facts about the user in each of the schema's `user_facts` lists.
pub const SCHEMA_MAX_FACTS: u32 = 8;
/// The kinds a proposed fact about the user may have (`super::parse::proposed_kind` reads them).
pub const SCHEMA_FACT_KINDS: [&str; 9] = [
    "name", "home", "work", "people", "pets", "likes", "dislikes", "health", "projects",
];

/// How one memory update asks for its reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryForm {
    /// A JSON object under a schema the server enforces while generating.
    Constrained(OutputForm),
    /// The two-section text (`=== CONVERSATION MEMORY ===` / `=== ENTITY MEMORY ===`), unconstrained.
    Sections,
}

impl MemoryForm {
    /// The stored name of the form.
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryForm::Constrained(OutputForm::JsonSchema) => "json_schema",
            MemoryForm::Constrained(OutputForm::JsonObject) => "json_object",
            MemoryForm::Constrained(OutputForm::OllamaFormat) => "ollama_format",
            MemoryForm::Constrained(OutputForm::ForcedTool) => "forced_tool",
            MemoryForm::Constrained(OutputForm::ResponsesFormat) => "text_format",
            MemoryForm::Sections => "sections",
        }
    }

    /// Reads a stored name.
    pub fn parse(s: &str) -> Option<MemoryForm> {
        ALL_FORMS.into_iter().find(|f| f.as_str() == s)
    }

    /// A short description for the memory pane ("JSON schema (response_format)").
    pub fn label(self) -> &'static str {
        match self {
            MemoryForm::Constrained(OutputForm::JsonSchema) => {
                "JSON schema (response_format json_schema)"
            }
            MemoryForm::Constrained(OutputForm::JsonObject) => {
                "JSON schema (response_format json_object)"
            }
            MemoryForm::Constrained(OutputForm::OllamaFormat) => "JSON schema (Ollama format)",
            MemoryForm::Constrained(OutputForm::ForcedTool) => "JSON schema (forced tool)",
            MemoryForm::Constrained(OutputForm::ResponsesFormat) => "JSON schema (text.format)",
            MemoryForm::Sections => "plain text sections (no constraint)",
        }
    }

    /// The output schema this form sends, if any.
    pub fn output(self) -> Option<OutputSchema> {
        match self {
            MemoryForm::Constrained(form) => Some(OutputSchema {
                form,
                name: SCHEMA_NAME.into(),
                description: TOOL_DESCRIPTION.into(),
                schema: update_schema(),
            }),
            MemoryForm::Sections => None,
        }
    }

    /// The words an error names when a server refuses this form.
    fn field_words(self) -> &'static [&'static str] {
        match self {
            MemoryForm::Constrained(OutputForm::JsonSchema) => &[
                "response_format",
                "json_schema",
                "json_object",
                "schema",
                "strict",
                "grammar",
            ],
            MemoryForm::Constrained(OutputForm::JsonObject) => {
                &["response_format", "json_object", "schema", "grammar"]
            }
            MemoryForm::Constrained(OutputForm::OllamaFormat) => &["format", "schema", "grammar"],
            MemoryForm::Constrained(OutputForm::ForcedTool) => &["tool", "schema"],
            MemoryForm::Constrained(OutputForm::ResponsesFormat) => {
                &["text.format", "format", "json_schema", "schema", "strict"]
            }
            MemoryForm::Sections => &[],
        }
    }
}

const ALL_FORMS: [MemoryForm; 6] = [
    MemoryForm::Constrained(OutputForm::JsonSchema),
    MemoryForm::Constrained(OutputForm::JsonObject),
    MemoryForm::Constrained(OutputForm::OllamaFormat),
    MemoryForm::Constrained(OutputForm::ForcedTool),
    MemoryForm::Constrained(OutputForm::ResponsesFormat),
    MemoryForm::Sections,
];

/// The forms `protocol` can carry, best first; the last is always [`MemoryForm::Sections`].
pub fn forms_for(protocol: Protocol) -> &'static [MemoryForm] {
    match protocol {
        Protocol::OpenAiChat => &[
            MemoryForm::Constrained(OutputForm::JsonSchema),
            MemoryForm::Constrained(OutputForm::JsonObject),
            MemoryForm::Sections,
        ],
        Protocol::Ollama => &[
            MemoryForm::Constrained(OutputForm::OllamaFormat),
            MemoryForm::Sections,
        ],
        Protocol::Anthropic => &[
            MemoryForm::Constrained(OutputForm::ForcedTool),
            MemoryForm::Sections,
        ],
        Protocol::OpenAiResponses => &[
            MemoryForm::Constrained(OutputForm::ResponsesFormat),
            MemoryForm::Sections,
        ],
    }
}

/// The form to try first: the remembered one when `protocol` can carry it, else the best.
pub fn start_form(protocol: Protocol, remembered: Option<MemoryForm>) -> MemoryForm {
    let forms = forms_for(protocol);
    remembered.filter(|f| forms.contains(f)).unwrap_or(forms[0])
}

/// The form after `form` for `protocol`, if any.
pub fn next_form(protocol: Protocol, form: MemoryForm) -> Option<MemoryForm> {
    let forms = forms_for(protocol);
    let i = forms.iter().position(|f| *f == form)?;
    forms.get(i + 1).copied()
}

fn names_field(form: MemoryForm, text: &str) -> bool {
    let text = text.to_ascii_lowercase();
    form.field_words().iter().any(|w| text.contains(w))
}

/// Whether an HTTP error answer to `form` says the server does not take that form.
pub fn refused_http(form: MemoryForm, status: u16, body: &str) -> bool {
    let refusing_status = match status {
        401 | 403 | 404 | 408 | 413 | 429 => false,
        400..=499 => true,
        500 | 501 => true,
        _ => false,
    };
    refusing_status && names_field(form, body)
}

/// Whether a stream's error event in answer to `form` says the server does not take that form.
pub fn refused_stream(form: MemoryForm, error: &StreamError) -> bool {
    names_field(form, &error.message) || error.code.as_deref().is_some_and(|c| names_field(form, c))
}

/// The JSON schema of a memory update: `summary` text and `entities` with id, type (the closed set),
/// name, aliases, description, properties (a list of key/value pairs: a free-form map cannot be
/// strict) and relationships (target id, label, strength); `no_longer_true`; and the facts about the
/// user said in the span and those it says no longer hold (`user_facts`, `user_facts_ended`: a
/// quote of the user's and a kind of [`SCHEMA_FACT_KINDS`] each, held to the user's words by
/// `super::proposed`). Satisfies OpenAI's strict mode: every
/// property required, `additionalProperties: false`, only `enum` and `maxItems` as constraints.
///
/// Kept as text because the order of the properties is the order a constrained server generates them
/// in (llama.cpp's grammar, OpenAI's strict mode): the summary first, so a reply cut by the token limit
/// still has it; and each entity's id, type and name before the rest (serde_json's map would sort them).
///
/// No `maxLength`: besides strict mode not taking it, llama-cpp-python turns `maxLength: n` into n
/// nested optional groups, and measured with SmolLM2-135M one update then took over ten minutes (a
/// bound of 1,200 crashed the server). Replies are bounded by the request's `max_tokens` instead.
pub fn update_schema() -> String {
    schema_text()
}

fn schema_text() -> String {
    let string = r#"{"type":"string"}"#;
    let (summary, description, name, value) = (string, string, string, string);
    let strings = format!(r#"{{"type":"array","items":{name},"maxItems":{SCHEMA_MAX_LIST}}}"#);
    let property = format!(
        r#"{{"type":"object","properties":{{"key":{name},"value":{value}}},"required":["key","value"],"additionalProperties":false}}"#
    );
    let relationship = format!(
        r#"{{"type":"object","properties":{{"targetId":{name},"relationship":{name},"strength":{{"type":"number"}}}},"required":["targetId","relationship","strength"],"additionalProperties":false}}"#
    );
    // Explained in the schema only, not in the instructions: told about it in the prompt, SmolLM2-135M
    // put the names it should have made entities there and left the entities empty (measured on the
    // real-model build test; without the line it gave the entities again).
    let no_longer = format!(
        r#"{{"type":"array","description":"Earlier facts these new messages say no longer hold (an old city after a move, an old job); [] when none.","items":{name},"maxItems":{SCHEMA_MAX_LIST}}}"#
    );
    let facts = |what: &str| {
        let kinds = SCHEMA_FACT_KINDS.map(|k| format!("\"{k}\"")).join(",");
        format!(
            r#"{{"type":"array","description":"{what} Each quote copies one sentence of the user's word for word, in their language; [] when none.","items":{{"type":"object","properties":{{"quote":{name},"kind":{{"type":"string","enum":[{kinds}]}}}},"required":["quote","kind"],"additionalProperties":false}},"maxItems":{SCHEMA_MAX_FACTS}}}"#
        )
    };
    let user_facts = facts("Facts about the user that the user states in these new messages.");
    let user_facts_ended = facts(
        "Facts about the user that these new messages say no longer hold (a move, a job left).",
    );
    let entity = format!(
        r#"{{"type":"object","properties":{{"id":{name},"type":{{"type":"string","enum":["person","place","concept","event","task","other"]}},"name":{name},"aliases":{strings},"description":{description},"properties":{{"type":"array","items":{property},"maxItems":{SCHEMA_MAX_LIST}}},"relationships":{{"type":"array","items":{relationship},"maxItems":{SCHEMA_MAX_LIST}}}}},"required":["id","type","name","aliases","description","properties","relationships"],"additionalProperties":false}}"#
    );
    format!(
        r#"{{"type":"object","properties":{{"summary":{summary},"entities":{{"type":"array","items":{entity},"maxItems":{SCHEMA_MAX_ENTITIES}}},"no_longer_true":{no_longer},"user_facts":{user_facts},"user_facts_ended":{user_facts_ended}}},"required":["summary","entities","no_longer_true","user_facts","user_facts_ended"],"additionalProperties":false}}"#
    )
}
