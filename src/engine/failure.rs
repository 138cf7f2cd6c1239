//! What went wrong with a request, classified into kinds the engine can act on and messages a user
//! can act on. Input is plain data (status, headers, body text, transport failure kind).
//! Must not import anything outside `crate::engine`.

/// The kinds of failure the turn state machine and the UI distinguish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailureKind {
    /// 401/403: the API key is missing or wrong.
    Auth,
    /// 404: wrong URL or model.
    NotFound,
    /// 429: rate limited; retry after this many seconds if the server said.
    RateLimited { retry_after_secs: Option<u32> },
    /// 5xx.
    Server,
    /// Other 4xx.
    BadRequest,
    /// The endpoint no longer knows the remote session (e.g. `previous_response_not_found`).
    SessionGone,
    /// fetch failed before any response: offline, DNS, refused, or blocked by CORS.
    Network,
    /// No first byte, or an idle gap mid-stream, longer than the limit.
    Timeout,
    /// The body was not the protocol's format, or the stream was cut off.
    Malformed,
    /// The user pressed stop.
    Aborted,
    /// The stream itself reported an error event.
    Stream,
}

/// A classified failure with a user-facing message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub kind: FailureKind,
    /// One or two sentences that say what happened and what to do.
    pub message: String,
    /// HTTP status, when there was a response.
    pub status: Option<u16>,
}
