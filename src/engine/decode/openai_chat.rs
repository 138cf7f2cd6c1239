//! `openai-chat`: `POST /chat/completions` with `stream: true` (OpenAI, llama.cpp, vLLM, LM Studio,
//! Ollama's `/v1`, OpenRouter). SSE `data:` lines holding `chat.completion.chunk` objects, ended by
//! `data: [DONE]`. Text comes from `choices[0].delta.content`, reasoning from
//! `choices[0].delta.reasoning_content` (DeepSeek, llama.cpp, vLLM) or, when that is absent,
//! `choices[0].delta.reasoning` (OpenRouter, newer vLLM, Ollama's `/v1`), tool calls from
//! `choices[0].delta.tool_calls[]` (`index`, `id`, `function.name`, `function.arguments` pieces),
//! usage from the final chunk when `stream_options.include_usage` was honoured, llama.cpp's
//! `timings` (`predicted_n`, `predicted_per_second`, `prompt_ms`) from its final chunk, the cached
//! prompt tokens from `usage.prompt_tokens_details.cached_tokens` (OpenAI, vLLM) or else llama.cpp's
//! `timings.cache_n` (beside `prompt_n`, the tokens it evaluated), and errors from an
//! `{"error": {...}}` object (or an `event: error`). `Done` is emitted at `[DONE]` with the last
//! `finish_reason` seen. Must not import anything outside `crate::engine`.

use std::borrow::Cow;

use serde::Deserialize;

use super::{tokens, Emitter, SseHandler, StreamEvent, Timings};
use crate::engine::model::Usage;

/// State of one openai-chat stream.
#[derive(Debug, Default)]
pub struct OpenAiChat {
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(borrow, default)]
    choices: Option<FirstChoice<'a>>,
    #[serde(default)]
    usage: Option<UsageIn>,
    #[serde(default)]
    timings: Option<TimingsIn>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

/// llama.cpp's `timings` object.
#[derive(Deserialize)]
struct TimingsIn {
    #[serde(default)]
    predicted_n: Option<u64>,
    #[serde(default)]
    predicted_per_second: Option<f64>,
    #[serde(default)]
    prompt_ms: Option<f64>,
    /// Prompt tokens taken from the slot's cache (llama-server).
    #[serde(default)]
    cache_n: Option<u64>,
}

/// The first choice with index 0 (Memoire asks for one choice); the others are read and dropped,
/// without collecting them into a vector.
struct FirstChoice<'a>(Option<Choice<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for FirstChoice<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit<'a>(std::marker::PhantomData<Choice<'a>>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visit<'a> {
            type Value = FirstChoice<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of choices")
            }
            fn visit_seq<S: serde::de::SeqAccess<'de>>(
                self,
                mut seq: S,
            ) -> Result<Self::Value, S::Error> {
                let mut first = None;
                while let Some(choice) = seq.next_element::<Choice<'a>>()? {
                    if first.is_none() && choice.index.unwrap_or(0) == 0 {
                        first = Some(choice);
                    }
                }
                Ok(FirstChoice(first))
            }
        }
        deserializer.deserialize_seq(Visit(std::marker::PhantomData))
    }
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(default)]
    index: Option<u64>,
    #[serde(borrow, default)]
    delta: Option<Delta<'a>>,
    #[serde(borrow, default)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(borrow, default)]
    content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    reasoning: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    tool_calls: Option<Vec<ToolCallIn<'a>>>,
}

#[derive(Deserialize)]
struct ToolCallIn<'a> {
    #[serde(default)]
    index: Option<u32>,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    function: Option<FunctionIn<'a>>,
}

#[derive(Deserialize)]
struct FunctionIn<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    arguments: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct UsageIn {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

impl SseHandler for OpenAiChat {
    fn on_event(&mut self, event: &str, data: &str, out: &mut Emitter) {
        if data.trim() == "[DONE]" {
            out.done(self.finish_reason.take());
            return;
        }
        if event == "error" {
            match serde_json::from_str::<serde_json::Value>(data) {
                Ok(value) => out.fail_with_json(&value, "The endpoint reported an error."),
                Err(_) => out.fail(None, super::sanitize_snippet(data, 200)),
            }
            return;
        }
        let chunk: Chunk = match serde_json::from_str(data) {
            Ok(chunk) => chunk,
            Err(_) => return out.malformed("a chunk", data),
        };
        if let Some(error) = &chunk.error {
            return out.fail_with_json(error, "The endpoint reported an error.");
        }
        if let Some(choice) = chunk.choices.and_then(|c| c.0) {
            if let Some(delta) = choice.delta {
                if let Some(reasoning) = delta.reasoning_content.or(delta.reasoning) {
                    out.reasoning(reasoning.into_owned());
                }
                if let Some(content) = delta.content {
                    out.text(content.into_owned());
                }
                for (i, call) in delta.tool_calls.into_iter().flatten().enumerate() {
                    let (name, arguments) = match call.function {
                        Some(f) => (f.name, f.arguments),
                        None => (None, None),
                    };
                    out.emit(StreamEvent::ToolCallDelta {
                        index: call.index.unwrap_or(i as u32),
                        id: call.id.map(Cow::into_owned),
                        name: name.map(Cow::into_owned),
                        arguments: arguments.map(Cow::into_owned).unwrap_or_default(),
                    });
                }
            }
            if let Some(reason) = choice.finish_reason {
                self.finish_reason = Some(reason.into_owned());
            }
        }
        let mut cached = None;
        if let Some(usage) = chunk.usage {
            out.emit(StreamEvent::Usage(Usage {
                prompt_tokens: tokens(usage.prompt_tokens),
                completion_tokens: tokens(usage.completion_tokens),
            }));
            cached = usage.prompt_tokens_details.and_then(|d| d.cached_tokens);
        }
        if let Some(t) = chunk.timings {
            out.emit(StreamEvent::Timings(Timings {
                tokens: t.predicted_n.map(|n| tokens(Some(n))),
                first_token_ms: t.prompt_ms.filter(|v| v.is_finite() && *v >= 0.0),
                tokens_per_s: t.predicted_per_second.filter(|v| v.is_finite() && *v > 0.0),
            }));
            cached = cached.or(t.cache_n);
        }
        if let Some(n) = cached {
            out.emit(StreamEvent::CachedTokens(tokens(Some(n))));
        }
    }
}
