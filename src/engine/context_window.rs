//! How many tokens a server's context really holds, from the server's own words, and the memory
//! config that fits it. Settings say how large the context is (8,192 tokens unless changed); the
//! server may hold less: llama-cpp-python starts with 2,048 unless told `--n_ctx`, llama-server
//! splits its context among its slots, LM Studio loads a model with the length picked in its UI. A
//! prompt built for 8,192 tokens then fails as soon as the conversation outgrows the server, on
//! every turn after, until the user finds the setting. So the page learns the server's window:
//! - from a refusal ([`overflow`]): the servers that refuse a prompt longer than their context
//!   say how long it may be, in one of a few wordings (OpenAI's, which llama-cpp-python and vLLM
//!   copy, `context_length_exceeded` / "maximum context length is N tokens"; llama-server's
//!   `exceed_context_size_error` with `n_ctx`; LM Studio's "context length of only N tokens";
//!   Anthropic's "prompt is too long: P tokens > N maximum"), and most say how long the prompt
//!   they counted was (what calibrates the page's token estimate);
//! - from llama-server's `GET /props` (`engine::slots`), before any refusal.
//!
//! [`fit`] is the config for a window: never larger than Settings say (a larger server changes
//! nothing), a small margin under the server's count for the estimate's error, and at most half
//! of it kept for the reply. [`refit`] says whether a turn refused for its length goes again at
//! once (only when what was learned makes the prompt smaller: one more refusal at the same size is
//! an error the user sees, with what to change; and never a continuation, whose prompt carries the
//! reply so far and does not shrink with the window: the user sees the error and Continue again). Ollama is not here: it does not refuse a long
//! prompt, it cuts it to its `num_ctx` from the front. Must not import anything outside
//! `crate::engine`.

use serde_json::Value;

use crate::engine::model::MemoryConfig;

/// The smallest window believed (a number under it is not a context size).
pub const MIN_WINDOW: u32 = 256;
/// The largest window believed.
pub const MAX_WINDOW: u32 = 100_000_000;
/// A fitted prompt leaves this share of the window (1/N) unused, for the estimate's error.
pub const MARGIN_DIVISOR: u32 = 20;

/// What a server said when it refused a prompt longer than its context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overflow {
    /// The context's size in tokens, when the server said it.
    pub window: Option<u32>,
    /// How many tokens the server counted in the prompt, when it said it.
    pub prompt_tokens: Option<u32>,
}

/// The refusal an error response (`status`, `body`) describes, if it is one of a prompt longer
/// than the server's context.
pub fn overflow(status: u16, body: &str) -> Option<Overflow> {
    if !(400..600).contains(&status) {
        return None;
    }
    let json = serde_json::from_str::<Value>(body).ok();
    let error = json.as_ref().map(|v| v.get("error").unwrap_or(v));
    let field = |k: &str| error.and_then(|e| e.get(k));
    let number = |k: &str| field(k).and_then(Value::as_u64).and_then(window_size);
    let text = field("message")
        .and_then(Value::as_str)
        .map_or_else(|| body.to_string(), str::to_string);
    let lower = text.to_ascii_lowercase();
    // llama-server: {"error":{"type":"exceed_context_size_error","n_prompt_tokens":P,"n_ctx":N}}.
    if field("type").and_then(Value::as_str) == Some("exceed_context_size_error") {
        return Some(Overflow {
            window: number("n_ctx"),
            prompt_tokens: number("n_prompt_tokens"),
        });
    }
    // OpenAI, vLLM and llama-cpp-python: "This model's maximum context length is N tokens.
    // However, you requested T tokens (P in the messages, C in the completion)."
    if lower.contains("maximum context length is ") {
        return Some(Overflow {
            window: after(&lower, "maximum context length is "),
            prompt_tokens: before(&lower, " in the messages")
                .or_else(|| before(&lower, " in your prompt"))
                .or_else(|| after(&lower, "resulted in ")),
        });
    }
    // Anthropic: "prompt is too long: P tokens > N maximum".
    if lower.contains("prompt is too long: ") {
        return Some(Overflow {
            window: after(&lower, " > ").filter(|_| lower.contains(" maximum")),
            prompt_tokens: after(&lower, "prompt is too long: "),
        });
    }
    // LM Studio: "… the model is loaded with context length of only N tokens …".
    if lower.contains("context length of only ") {
        return Some(Overflow {
            window: after(&lower, "context length of only "),
            prompt_tokens: after(&lower, "keep the first "),
        });
    }
    let code = field("code").and_then(Value::as_str);
    let said = code == Some("context_length_exceeded")
        || lower.contains("exceeds the available context size")
        || lower.contains("exceed context window")
        || lower.contains("context length exceeded");
    said.then_some(Overflow {
        window: after(&lower, "context window of "),
        prompt_tokens: after(&lower, "requested tokens ("),
    })
}

/// `config` fitted to a server whose context holds `window` tokens (module doc): unchanged when
/// the window is at least what Settings say.
pub fn fit(config: &MemoryConfig, window: u32) -> MemoryConfig {
    let usable = window.saturating_sub(window / MARGIN_DIVISOR);
    if usable >= config.context_tokens {
        return config.clone();
    }
    MemoryConfig {
        context_tokens: usable,
        reply_reserve_tokens: config.reply_reserve_tokens.min(usable / 2),
        ..config.clone()
    }
}

/// Whether a prompt refused for its length, built under `used`, goes again at once now that the
/// server's context is known to hold `window` tokens: only when the fitted prompt is smaller.
pub fn refit(used: &MemoryConfig, window: u32, continuation: bool) -> bool {
    !continuation && fit(used, window).context_tokens < used.context_tokens
}

/// A number a server gives as a context size, if it can be one.
fn window_size(n: u64) -> Option<u32> {
    u32::try_from(n)
        .ok()
        .filter(|n| (MIN_WINDOW..=MAX_WINDOW).contains(n))
}

/// The number that starts right after `marker` in `text` (digits, with `,` or `_` between them).
fn after(text: &str, marker: &str) -> Option<u32> {
    let at = text.find(marker)? + marker.len();
    leading_number(&text[at..])
}

/// The number that ends right before `marker` in `text`.
fn before(text: &str, marker: &str) -> Option<u32> {
    let head = &text[..text.find(marker)?];
    let start = head
        .rfind(|c: char| !(c.is_ascii_digit() || c == ',' || c == '_'))
        .map_or(0, |i| i + 1);
    leading_number(&head[start..])
}

fn leading_number(s: &str) -> Option<u32> {
    let digits: String = s
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',' || *c == '_')
        .filter(char::is_ascii_digit)
        .collect();
    digits.parse::<u64>().ok().and_then(window_size)
}
