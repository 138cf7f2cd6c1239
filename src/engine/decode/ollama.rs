//! `ollama`: `POST /api/chat` with `stream: true` answers NDJSON, one JSON object per line:
//! `{"model":..,"created_at":..,"message":{"role":"assistant","content":".."},"done":false}` (with
//! `think: true`, the reasoning comes first in `message.thinking`) and a
//! last line with `"done":true`, `done_reason`, `prompt_eval_count` and `eval_count` (usage), and
//! `eval_duration`, `prompt_eval_duration` and `load_duration` in ns (the timings).
//! Tool calls arrive whole in `message.tool_calls[]` with `function.arguments` as a JSON object; each
//! becomes one [`StreamEvent::ToolCallDelta`] with the arguments serialised, numbered in stream order
//! (or by `function.index` when the server gives it). An `{"error": "..."}` line is an error.
//! Must not import anything outside `crate::engine`.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use super::sse::LineSplitter;
use super::{tokens, Decoder, Emitter, StreamEvent, Timings};
use crate::engine::model::Usage;

/// Decoder for Ollama's NDJSON chat stream.
#[derive(Debug, Default)]
pub struct OllamaDecoder {
    lines: LineSplitter,
    state: State,
    out: Emitter,
    received_any: bool,
}

#[derive(Debug, Default)]
struct State {
    tool_calls: u32,
}

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow, default)]
    message: Option<MessageIn<'a>>,
    #[serde(default)]
    done: Option<bool>,
    #[serde(borrow, default)]
    done_reason: Option<Cow<'a, str>>,
    #[serde(default)]
    prompt_eval_count: Option<u64>,
    #[serde(default)]
    eval_count: Option<u64>,
    #[serde(default)]
    eval_duration: Option<u64>,
    #[serde(default)]
    prompt_eval_duration: Option<u64>,
    #[serde(default)]
    load_duration: Option<u64>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct MessageIn<'a> {
    #[serde(borrow, default)]
    content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default)]
    tool_calls: Option<Vec<Value>>,
}

impl State {
    fn on_line(&mut self, line: &str, out: &mut Emitter) {
        if line.trim().is_empty() {
            return;
        }
        let parsed: Line = match serde_json::from_str(line) {
            Ok(parsed) => parsed,
            // Every line is an object: a cut-off one still starts with `{`; anything else is not
            // this protocol at all, even at the end of the body.
            Err(_) if !line.trim_start().starts_with('{') => return out.invalid("a line", line),
            Err(_) => return out.malformed("a line", line),
        };
        if let Some(error) = &parsed.error {
            let value = match error {
                Value::String(_) => serde_json::json!({ "error": error }),
                _ => error.clone(),
            };
            return out.fail_with_json(&value, "The endpoint reported an error.");
        }
        let timings = timings(&parsed);
        if let Some(message) = parsed.message {
            if let Some(thinking) = message.thinking {
                out.reasoning(thinking.into_owned());
            }
            if let Some(content) = message.content {
                out.text(content.into_owned());
            }
            for call in message.tool_calls.into_iter().flatten() {
                let function = call.get("function").unwrap_or(&Value::Null);
                let index = function
                    .get("index")
                    .and_then(Value::as_u64)
                    .and_then(|i| u32::try_from(i).ok())
                    .unwrap_or(self.tool_calls);
                self.tool_calls = self.tool_calls.max(index.saturating_add(1));
                let arguments = match function.get("arguments") {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Null) | None => String::new(),
                    Some(other) => other.to_string(),
                };
                out.emit(StreamEvent::ToolCallDelta {
                    index,
                    id: call.get("id").and_then(Value::as_str).map(str::to_string),
                    name: function
                        .get("name")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    arguments,
                });
            }
        }
        if parsed.done == Some(true) {
            if let Some(t) = timings {
                out.emit(StreamEvent::Timings(t));
            }
            if parsed.prompt_eval_count.is_some() || parsed.eval_count.is_some() {
                out.emit(StreamEvent::Usage(Usage {
                    prompt_tokens: tokens(parsed.prompt_eval_count),
                    completion_tokens: tokens(parsed.eval_count),
                }));
            }
            out.done(parsed.done_reason.map(Cow::into_owned));
        }
    }
}

/// The last line's counts and durations (ns) as timings, when it has any.
fn timings(line: &Line) -> Option<Timings> {
    let eval = line.eval_duration.filter(|d| *d > 0);
    let tokens_per_s = match (line.eval_count, eval) {
        (Some(n), Some(d)) if n > 0 => Some(n as f64 * 1e9 / d as f64),
        _ => None,
    };
    let first = match (line.prompt_eval_duration, line.load_duration) {
        (None, None) => None,
        (p, l) => Some((p.unwrap_or(0).saturating_add(l.unwrap_or(0))) as f64 / 1e6),
    };
    (eval.is_some() || first.is_some()).then(|| Timings {
        tokens: line.eval_count.map(|n| tokens(Some(n))),
        first_token_ms: first,
        tokens_per_s,
    })
}

impl Decoder for OllamaDecoder {
    fn handle_bytes(&mut self, bytes: &[u8]) {
        if self.out.finished() || bytes.is_empty() {
            return;
        }
        self.received_any = true;
        let (state, out) = (&mut self.state, &mut self.out);
        self.lines.feed(bytes, &mut |line| {
            match line {
                Ok(line) => state.on_line(line, out),
                Err(e) => out.line_error(e),
            }
            !out.finished()
        });
    }

    fn handle_eof(&mut self) {
        if self.out.finished() {
            return;
        }
        self.out.set_eof();
        let (state, out) = (&mut self.state, &mut self.out);
        self.lines.finish(&mut |line| {
            match line {
                Ok(line) => state.on_line(line, out),
                Err(e) => out.line_error(e),
            }
            !out.finished()
        });
        self.out.end(self.received_any, None);
    }

    fn poll_event(&mut self) -> Option<StreamEvent> {
        self.out.pop()
    }
}
