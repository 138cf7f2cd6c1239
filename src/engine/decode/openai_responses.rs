//! `openai-responses`: `POST /responses` with `stream: true`. SSE events named by `event:` whose
//! `data:` JSON repeats the name in `type`:
//! - `response.created` / `response.in_progress` carry `response.id` → [`StreamEvent::ResponseId`]
//!   (the handle a later turn continues with `previous_response_id`), reported once per id;
//! - `response.output_text.delta` (and `response.refusal.delta`) → text;
//! - `response.reasoning_summary_text.delta` (and `response.reasoning_text.delta`, the raw
//!   reasoning of open-weight models) → reasoning; a summary part after the first
//!   (`response.reasoning_summary_part.added` with `summary_index` > 0) opens a new paragraph;
//! - `response.output_item.added` with a `function_call` item → the start of a tool call (`call_id`,
//!   `name`), then `response.function_call_arguments.delta` → its argument pieces; both grouped by
//!   `output_index`;
//! - `response.completed` → usage (`input_tokens`/`output_tokens`, and the cached prompt tokens of
//!   `input_tokens_details.cached_tokens`) and `Done` (`completed`);
//!   `response.incomplete` → usage and `Done` with `incomplete_details.reason` (e.g.
//!   `max_output_tokens`): the text is whole but was stopped by a limit, like `finish_reason: length`;
//! - `response.failed` → `Error` from `response.error`; `error` → `Error` with its `code`
//!   (e.g. `previous_response_not_found`).
//!
//! Other events (`*.done`, `content_part.*`...) repeat or add nothing the
//! engine uses and are skipped. Must not import anything outside `crate::engine`.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use super::{tokens, Emitter, SseHandler, StreamEvent};
use crate::engine::model::Usage;

/// State of one openai-responses stream.
#[derive(Debug, Default)]
pub struct OpenAiResponses {
    response_id: Option<String>,
}

/// Every field but `type` is a `Value`, so that an event the engine skips can never fail to parse
/// because its fields have another shape.
#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(default)]
    delta: Option<Value>,
    #[serde(default)]
    output_index: Option<Value>,
    #[serde(default)]
    summary_index: Option<Value>,
    #[serde(default)]
    item: Option<Value>,
    #[serde(default)]
    response: Option<Value>,
    #[serde(default)]
    code: Option<Value>,
    #[serde(default)]
    message: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

fn str_of<'v>(v: &'v Value, key: &str) -> Option<&'v str> {
    v.get(key).and_then(Value::as_str)
}

impl OpenAiResponses {
    fn response_id(&mut self, response: Option<&Value>, out: &mut Emitter) {
        if let Some(id) = response.and_then(|r| str_of(r, "id")) {
            if !id.is_empty() && self.response_id.as_deref() != Some(id) {
                self.response_id = Some(id.to_string());
                out.emit(StreamEvent::ResponseId(id.to_string()));
            }
        }
    }

    fn finish(&mut self, response: Option<&Value>, reason: String, out: &mut Emitter) {
        self.response_id(response, out);
        if let Some(usage) = response
            .and_then(|r| r.get("usage"))
            .filter(|u| u.is_object())
        {
            out.emit(StreamEvent::Usage(Usage {
                prompt_tokens: tokens(usage.get("input_tokens").and_then(Value::as_u64)),
                completion_tokens: tokens(usage.get("output_tokens").and_then(Value::as_u64)),
            }));
            let cached = usage
                .get("input_tokens_details")
                .and_then(|d| d.get("cached_tokens"))
                .and_then(Value::as_u64);
            if let Some(n) = cached {
                out.emit(StreamEvent::CachedTokens(tokens(Some(n))));
            }
        }
        out.done(Some(reason));
    }
}

fn output_index(event: &Event) -> u32 {
    event
        .output_index
        .as_ref()
        .and_then(Value::as_u64)
        .map_or(0, |i| u32::try_from(i).unwrap_or(u32::MAX))
}

/// A summary part after the first opens a new paragraph of the reasoning.
fn part_added(event: &Event, out: &mut Emitter) {
    if event.summary_index.as_ref().and_then(Value::as_u64) > Some(0) {
        out.reasoning("\n\n".into());
    }
}

/// A piece of the reasoning (summary or raw).
fn reasoning(delta: Option<Value>, data: &str, out: &mut Emitter) {
    match delta {
        Some(Value::String(text)) => out.reasoning(text),
        _ => out.malformed("a reasoning delta", data),
    }
}

impl SseHandler for OpenAiResponses {
    fn on_event(&mut self, name: &str, data: &str, out: &mut Emitter) {
        let mut event: Event = match serde_json::from_str(data) {
            Ok(event) => event,
            Err(_) => return out.malformed("an event", data),
        };
        let kind = event.kind.as_deref().unwrap_or(name);
        match kind {
            "response.created" | "response.in_progress" => {
                self.response_id(event.response.as_ref(), out)
            }
            "response.output_text.delta" | "response.refusal.delta" => match event.delta.take() {
                Some(Value::String(text)) => out.text(text),
                _ => out.malformed("a text delta", data),
            },
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                reasoning(event.delta.take(), data, out)
            }
            "response.reasoning_summary_part.added" => part_added(&event, out),
            "response.output_item.added" => {
                let Some(item) = &event.item else { return };
                if str_of(item, "type") == Some("function_call") {
                    out.emit(StreamEvent::ToolCallDelta {
                        index: output_index(&event),
                        id: str_of(item, "call_id").map(str::to_string),
                        name: str_of(item, "name").map(str::to_string),
                        arguments: str_of(item, "arguments").unwrap_or("").to_string(),
                    });
                }
            }
            "response.function_call_arguments.delta" => match &event.delta {
                Some(Value::String(arguments)) => out.emit(StreamEvent::ToolCallDelta {
                    index: output_index(&event),
                    id: None,
                    name: None,
                    arguments: arguments.clone(),
                }),
                _ => out.malformed("a tool-call delta", data),
            },
            "response.completed" => self.finish(event.response.as_ref(), "completed".into(), out),
            "response.incomplete" => {
                let reason = event
                    .response
                    .as_ref()
                    .and_then(|r| r.get("incomplete_details"))
                    .and_then(|d| str_of(d, "reason"))
                    .unwrap_or("incomplete")
                    .to_string();
                self.finish(event.response.as_ref(), reason, out)
            }
            "response.failed" => {
                self.response_id(event.response.as_ref(), out);
                match event.response.as_ref().and_then(|r| r.get("error")) {
                    Some(error) if error.is_object() => {
                        out.fail_with_json(error, "The endpoint reported that the response failed.")
                    }
                    _ => out.fail(
                        None,
                        "The endpoint reported that the response failed.".into(),
                    ),
                }
            }
            "error" => {
                let mut fields = serde_json::Map::new();
                for (key, value) in [("code", &event.code), ("message", &event.message)] {
                    if let Some(value) = value {
                        fields.insert(key.into(), value.clone());
                    }
                }
                let value = match &event.error {
                    Some(error) if error.is_object() && fields.is_empty() => error.clone(),
                    _ => Value::Object(fields),
                };
                out.fail_with_json(&value, "The endpoint reported an error.")
            }
            _ => {}
        }
    }
}
