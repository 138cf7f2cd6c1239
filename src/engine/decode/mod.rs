//! Sans-IO stream decoders: bytes in (`handle_bytes`, `handle_eof`), events out (`poll_event`).
//! One decoder per protocol; all emit the same [`StreamEvent`]s whatever the chunk boundaries.
//! Must not import anything outside `crate::engine`.
//!
//! Layout: `sse` splits bytes into lines and server-sent events (`engine::mcp` reads MCP's streams
//! with it too); each protocol module maps its
//! JSON onto [`StreamEvent`]s through an `Emitter`, which enforces the shared rules: nothing after
//! `Done` or `Error`, `Done` at most once, and a body that ends before the protocol's terminator
//! gives an `Error` with code [`CODE_CUT_OFF`] (the caller marks the reply interrupted).
//! Reasoning is its own event, never text: each protocol's own field for it (`reasoning_content`
//! or `reasoning`, Ollama's `message.thinking`, Anthropic's `thinking_delta`, Responses'
//! reasoning summary) becomes [`StreamEvent::ReasoningDelta`], and so does a `<think>` block that
//! opens the text (`think`, applied by the `Emitter` to every protocol's text).
//! JSON is parsed with typed serde structs that borrow from the line where they can.

mod anthropic;
mod ollama;
mod openai_chat;
mod openai_responses;
pub(crate) mod sse;
mod think;

use std::collections::VecDeque;

use crate::engine::failure::{error_parts, sanitize_snippet};
use crate::engine::model::{Protocol, Usage};
use sse::{LineError, SseParser};
use think::ThinkSplit;

/// `StreamError::code` when the body ended before the protocol's terminator.
pub const CODE_CUT_OFF: &str = "stream_cut_off";
/// `StreamError::code` when the body was not the protocol's format.
pub const CODE_MALFORMED: &str = "stream_malformed";

/// What a decoder reports. Every protocol maps onto these.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// A piece of reply text.
    TextDelta(String),
    /// A piece of the model's reasoning (its thinking), apart from the reply text.
    ReasoningDelta(String),
    /// A piece of a tool call; `index` groups the pieces of one call.
    ToolCallDelta {
        index: u32,
        id: Option<String>,
        name: Option<String>,
        arguments: String,
    },
    /// Token usage reported by the endpoint.
    Usage(Usage),
    /// Generation timings the server reported (llama.cpp's `timings`, Ollama's durations).
    Timings(Timings),
    /// Prompt tokens the server read from its cache rather than evaluating them again, as it
    /// reported them (OpenAI's `cached_tokens`, llama.cpp's `timings.cache_n`, Anthropic's
    /// `cache_read_input_tokens`); given only by a server that reports it.
    CachedTokens(u32),
    /// A server-side id the next turn can continue from (Responses API `response.id`).
    ResponseId(String),
    /// The reply finished normally.
    Done { finish_reason: Option<String> },
    /// The stream reported an error, or was malformed. No events follow.
    Error(StreamError),
}

/// What a server reported of a reply's generation; each figure when it said it.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Timings {
    /// Tokens generated.
    pub tokens: Option<u32>,
    /// Time to the first token: reading the prompt (and loading the model), in ms.
    pub first_token_ms: Option<f64>,
    /// Tokens generated per second.
    pub tokens_per_s: Option<f64>,
}

/// A decoded stream failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamError {
    /// Machine-readable code when the endpoint gave one (e.g. `previous_response_not_found`).
    pub code: Option<String>,
    pub message: String,
}

/// A sans-IO decoder.
pub trait Decoder {
    /// Feed the next chunk of the body, split anywhere.
    fn handle_bytes(&mut self, bytes: &[u8]);
    /// The body ended. A stream that ends without its terminator yields an `Error` event.
    fn handle_eof(&mut self);
    /// The next decoded event, if any.
    fn poll_event(&mut self) -> Option<StreamEvent>;
}

/// The decoder for a protocol.
pub fn decoder_for(protocol: Protocol) -> Box<dyn Decoder> {
    match protocol {
        Protocol::OpenAiChat => Box::new(SseDecoder::new(openai_chat::OpenAiChat::default())),
        Protocol::OpenAiResponses => {
            Box::new(SseDecoder::new(openai_responses::OpenAiResponses::default()))
        }
        Protocol::Ollama => Box::new(ollama::OllamaDecoder::default()),
        Protocol::Anthropic => Box::new(SseDecoder::new(anthropic::Anthropic::default())),
    }
}

/// Decodes a whole body at once (tests, tools, non-streamed replies).
pub fn decode_all(protocol: Protocol, body: &[u8]) -> Vec<StreamEvent> {
    let mut decoder = decoder_for(protocol);
    decoder.handle_bytes(body);
    decoder.handle_eof();
    std::iter::from_fn(|| decoder.poll_event()).collect()
}

/// The queue of decoded events plus the rules every protocol shares.
#[derive(Debug, Default)]
pub(crate) struct Emitter {
    queue: VecDeque<StreamEvent>,
    finished: bool,
    /// The body has ended: a line that fails to parse now means the stream was cut off.
    eof: bool,
    /// The `<think>` block that may open the text.
    think: ThinkSplit,
}

impl Emitter {
    pub(crate) fn finished(&self) -> bool {
        self.finished
    }

    pub(crate) fn set_eof(&mut self) {
        self.eof = true;
    }

    pub(crate) fn pop(&mut self) -> Option<StreamEvent> {
        self.queue.pop_front()
    }

    pub(crate) fn emit(&mut self, event: StreamEvent) {
        if !self.finished {
            self.queue.push_back(event);
        }
    }

    /// A piece of the reply's text (a `<think>` block opening it becomes reasoning).
    pub(crate) fn text(&mut self, text: String) {
        if text.is_empty() {
            return;
        }
        if self.think.passing() {
            return self.emit(StreamEvent::TextDelta(text));
        }
        let split = self.think.push(&text);
        self.split(split);
    }

    /// A piece of the reply's reasoning, from a protocol's own field for it.
    pub(crate) fn reasoning(&mut self, text: String) {
        if !text.is_empty() {
            self.emit(StreamEvent::ReasoningDelta(text));
        }
    }

    fn split(&mut self, (reasoning, text): (String, String)) {
        self.reasoning(reasoning);
        if !text.is_empty() {
            self.emit(StreamEvent::TextDelta(text));
        }
    }

    /// The reply ends: what the `<think>` split still holds goes out.
    fn flush(&mut self) {
        if !self.finished {
            let split = self.think.finish();
            self.split(split);
        }
    }

    pub(crate) fn done(&mut self, finish_reason: Option<String>) {
        self.flush();
        self.emit(StreamEvent::Done { finish_reason });
        self.finished = true;
    }

    pub(crate) fn fail(&mut self, code: Option<String>, message: String) {
        self.flush();
        self.emit(StreamEvent::Error(StreamError { code, message }));
        self.finished = true;
    }

    /// An error object the endpoint sent inside the stream.
    pub(crate) fn fail_with_json(&mut self, value: &serde_json::Value, fallback: &str) {
        let (code, message) = error_parts(value);
        self.fail(code, message.unwrap_or_else(|| fallback.to_string()));
    }

    /// A line or event that is not the protocol's format. At the end of the body this is the
    /// unterminated tail of a cut-off stream.
    pub(crate) fn malformed(&mut self, what: &str, text: &str) {
        if self.eof {
            self.cut_off();
        } else {
            self.invalid(what, text);
        }
    }

    /// Input that is not the protocol's format, even as the tail of a cut-off stream.
    pub(crate) fn invalid(&mut self, what: &str, text: &str) {
        self.fail(
            Some(CODE_MALFORMED.into()),
            format!(
                "The endpoint sent {what} that could not be read: {}",
                sanitize_snippet(text, 120)
            ),
        );
    }

    pub(crate) fn cut_off(&mut self) {
        self.fail(
            Some(CODE_CUT_OFF.into()),
            "The reply was cut off: the connection closed before the endpoint finished.".into(),
        );
    }

    pub(crate) fn line_error(&mut self, error: LineError) {
        self.fail(Some(CODE_MALFORMED.into()), error.message());
    }

    /// The body ended. `junk` is a sample of a body that was not the expected format.
    pub(crate) fn end(&mut self, received_any: bool, junk: Option<&str>) {
        self.eof = true;
        if self.finished {
            return;
        }
        match junk {
            Some(junk) => match serde_json::from_str::<serde_json::Value>(junk) {
                Ok(value) if value.is_object() => self.fail_with_json(
                    &value,
                    "The endpoint answered with an error instead of a stream.",
                ),
                _ => self.fail(
                    Some(CODE_MALFORMED.into()),
                    format!(
                        "The endpoint did not send a stream this protocol understands; it said: {}",
                        sanitize_snippet(junk, 200)
                    ),
                ),
            },
            None if !received_any => self.fail(
                Some(CODE_CUT_OFF.into()),
                "The endpoint closed the connection without sending a reply.".into(),
            ),
            None => self.cut_off(),
        }
    }
}

/// What a protocol does with each server-sent event.
pub(crate) trait SseHandler {
    fn on_event(&mut self, event: &str, data: &str, out: &mut Emitter);
}

/// A [`Decoder`] for the SSE-based protocols.
#[derive(Debug, Default)]
pub(crate) struct SseDecoder<H> {
    parser: SseParser,
    handler: H,
    out: Emitter,
    received_any: bool,
}

impl<H: SseHandler> SseDecoder<H> {
    pub(crate) fn new(handler: H) -> Self {
        SseDecoder {
            parser: SseParser::default(),
            handler,
            out: Emitter::default(),
            received_any: false,
        }
    }
}

impl<H: SseHandler> Decoder for SseDecoder<H> {
    fn handle_bytes(&mut self, bytes: &[u8]) {
        if self.out.finished || bytes.is_empty() {
            return;
        }
        self.received_any = true;
        let (handler, out) = (&mut self.handler, &mut self.out);
        self.parser.feed(bytes, &mut |item| {
            match item {
                Ok(ev) => handler.on_event(ev.event, ev.data, out),
                Err(e) => out.line_error(e),
            }
            !out.finished
        });
    }

    fn handle_eof(&mut self) {
        if self.out.finished {
            return;
        }
        self.out.eof = true;
        let (handler, out) = (&mut self.handler, &mut self.out);
        self.parser.finish(&mut |item| {
            match item {
                Ok(ev) => handler.on_event(ev.event, ev.data, out),
                Err(e) => out.line_error(e),
            }
            !out.finished
        });
        self.out.end(self.received_any, self.parser.junk());
    }

    fn poll_event(&mut self) -> Option<StreamEvent> {
        self.out.queue.pop_front()
    }
}

/// Saturating conversion of a reported token count.
pub(crate) fn tokens(n: Option<u64>) -> u32 {
    n.map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX))
}
