//! `anthropic`: `POST /v1/messages` with `stream: true`. SSE events named by `event:` whose `data:`
//! JSON repeats the name in `type`:
//! `message_start` (`message.usage.input_tokens`), `content_block_start` (a `text` block, a
//! `thinking` block, or a `tool_use` block with `id` and `name`), `content_block_delta`
//! (`text_delta.text` → text, `thinking_delta.thinking` → reasoning, `signature_delta` skipped,
//! `input_json_delta.partial_json` → tool-call arguments, grouped by the block `index`),
//! `content_block_stop`, `message_delta` (`delta.stop_reason`, cumulative `usage.output_tokens`),
//! `message_stop` (the terminator), `ping`, and `error` (`error.type` becomes the code).
//! Usage is reported once, just before `Done`, followed by the prompt tokens read from the cache
//! (`cache_read_input_tokens`, of `message_start` or, when it says it, the cumulative
//! `message_delta`), when the server gave that count. The message id is not reported as a
//! [`StreamEvent::ResponseId`]: the Messages API is stateless and nothing can continue from it.
//! Must not import anything outside `crate::engine`.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use super::{tokens, Emitter, SseHandler, StreamEvent};
use crate::engine::model::Usage;

/// State of one anthropic stream.
#[derive(Debug, Default)]
pub struct Anthropic {
    usage: Option<Usage>,
    /// `cache_read_input_tokens`, the last reported.
    cached: Option<u32>,
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(default)]
    index: Option<Value>,
    #[serde(borrow, default)]
    delta: Option<Delta<'a>>,
    #[serde(default)]
    content_block: Option<Value>,
    #[serde(default)]
    message: Option<Value>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    thinking: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    partial_json: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    stop_reason: Option<Cow<'a, str>>,
}

fn count(usage: &Value, key: &str) -> Option<u64> {
    usage.get(key).and_then(Value::as_u64)
}

/// All prompt tokens: fresh input plus cache writes and reads.
fn prompt_tokens(usage: &Value) -> Option<u32> {
    let keys = [
        "input_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
    ];
    let counts: Vec<u64> = keys.iter().filter_map(|k| count(usage, k)).collect();
    (!counts.is_empty())
        .then(|| tokens(Some(counts.iter().fold(0u64, |a, b| a.saturating_add(*b)))))
}

impl Anthropic {
    /// `message_start`: the prompt tokens (and any output tokens) of `message.usage`.
    fn message_start(&mut self, message: Option<&Value>) {
        let usage = message.and_then(|m| m.get("usage"));
        if let Some(n) = usage.and_then(|u| count(u, "cache_read_input_tokens")) {
            self.cached = Some(tokens(Some(n)));
        }
        if let Some(prompt) = usage.and_then(prompt_tokens) {
            let completion = tokens(usage.and_then(|u| count(u, "output_tokens")));
            self.usage = Some(Usage {
                prompt_tokens: prompt,
                completion_tokens: completion,
            });
        }
    }

    /// `message_delta`: the stop reason of `delta`, and the cumulative `usage`.
    fn message_delta(&mut self, delta: Option<Delta<'_>>, usage: Option<&Value>) {
        if let Some(reason) = delta.and_then(|d| d.stop_reason) {
            self.stop_reason = Some(reason.into_owned());
        }
        if let Some(usage) = usage.filter(|u| u.is_object()) {
            if let Some(n) = count(usage, "cache_read_input_tokens") {
                self.cached = Some(tokens(Some(n)));
            }
            let mut total = self.usage.unwrap_or_default();
            if let Some(prompt) = prompt_tokens(usage) {
                total.prompt_tokens = prompt;
            }
            if let Some(output) = count(usage, "output_tokens") {
                total.completion_tokens = tokens(Some(output));
            }
            self.usage = Some(total);
        }
    }
}

/// `content_block_start` of block `index`: a text block's text, or a tool call's id, name and any
/// input already given.
fn block_start(block: &Value, index: u32, out: &mut Emitter) {
    match block.get("type").and_then(Value::as_str) {
        Some("text") => {
            if let Some(text) = block.get("text").and_then(Value::as_str) {
                out.text(text.to_string());
            }
        }
        Some("thinking") => {
            if let Some(thinking) = block.get("thinking").and_then(Value::as_str) {
                out.reasoning(thinking.to_string());
            }
        }
        Some("tool_use") | Some("server_tool_use") => {
            let arguments = match block.get("input") {
                Some(Value::Object(map)) if !map.is_empty() => {
                    Value::Object(map.clone()).to_string()
                }
                _ => String::new(),
            };
            out.emit(StreamEvent::ToolCallDelta {
                index,
                id: block.get("id").and_then(Value::as_str).map(str::to_string),
                name: block
                    .get("name")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                arguments,
            });
        }
        _ => {}
    }
}

/// `content_block_delta` of block `index`: text, or a piece of a tool call's arguments.
fn block_delta(delta: Delta<'_>, index: u32, out: &mut Emitter) {
    match delta.kind.as_deref() {
        Some("text_delta") => out.text(delta.text.unwrap_or_default().into_owned()),
        Some("thinking_delta") => out.reasoning(delta.thinking.unwrap_or_default().into_owned()),
        Some("input_json_delta") => out.emit(StreamEvent::ToolCallDelta {
            index,
            id: None,
            name: None,
            arguments: delta.partial_json.unwrap_or_default().into_owned(),
        }),
        _ => {}
    }
}

impl SseHandler for Anthropic {
    fn on_event(&mut self, name: &str, data: &str, out: &mut Emitter) {
        let event: Event = match serde_json::from_str(data) {
            Ok(event) => event,
            Err(_) => return out.malformed("an event", data),
        };
        let index = event
            .index
            .as_ref()
            .and_then(Value::as_u64)
            .map_or(0, |i| u32::try_from(i).unwrap_or(u32::MAX));
        match event.kind.as_deref().unwrap_or(name) {
            "message_start" => self.message_start(event.message.as_ref()),
            "content_block_start" => {
                if let Some(block) = &event.content_block {
                    block_start(block, index, out);
                }
            }
            "content_block_delta" => {
                let Some(delta) = event.delta else {
                    return out.malformed("an event", data);
                };
                block_delta(delta, index, out);
            }
            "message_delta" => self.message_delta(event.delta, event.usage.as_ref()),
            "message_stop" => {
                if let Some(usage) = self.usage.take() {
                    out.emit(StreamEvent::Usage(usage));
                }
                if let Some(n) = self.cached.take() {
                    out.emit(StreamEvent::CachedTokens(n));
                }
                out.done(self.stop_reason.take());
            }
            "error" => {
                let value = event
                    .error
                    .unwrap_or_else(|| serde_json::from_str(data).unwrap_or(Value::Null));
                out.fail_with_json(&value, "The endpoint reported an error.")
            }
            _ => {}
        }
    }
}
