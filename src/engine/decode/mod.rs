//! Sans-IO stream decoders: bytes in (`handle_bytes`, `handle_eof`), events out (`poll_event`).
//! One decoder per protocol; all emit the same [`StreamEvent`]s whatever the chunk boundaries.
//! Must not import anything outside `crate::engine`.

use crate::engine::model::{Protocol, Usage};

/// What a decoder reports. Every protocol maps onto these.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// A piece of reply text.
    TextDelta(String),
    /// A piece of a tool call; `index` groups the pieces of one call.
    ToolCallDelta {
        index: u32,
        id: Option<String>,
        name: Option<String>,
        arguments: String,
    },
    /// Token usage reported by the endpoint.
    Usage(Usage),
    /// A server-side id the next turn can continue from (Responses API `response.id`).
    ResponseId(String),
    /// The reply finished normally.
    Done { finish_reason: Option<String> },
    /// The stream reported an error, or was malformed. No events follow.
    Error(StreamError),
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
pub fn decoder_for(_protocol: Protocol) -> Box<dyn Decoder> {
    todo!("decoders are being written")
}
