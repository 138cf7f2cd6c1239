//! Transport: `fetch` with an incrementally read body, stop through `AbortController`, and timeouts
//! for the first byte and for idle gaps mid-stream. Moves bytes; decides nothing: decoding is the
//! engine's (`engine::decode`), classifying failures is the engine's (`engine::failure`).
//! May import `crate::engine` and web crates; must not import `store`, `session` or `ui`.
//!
//! A read waits for a chunk, the first-byte/idle limit, or the caller's own wake-up time (the turn's
//! held save), whichever comes first, on one `gloo-timers` timer that is cleared when the read
//! settles; a read cut short by a wake-up stays pending and the next call continues it.
//!
//! No request follows a redirect (`redirect: "manual"`): a redirect would carry the request's
//! credential (an API key, `Authorization`, the sync password) and its body to an address the
//! user never entered, and the browser hides where a manual redirect points, so a same-origin one
//! cannot be told apart. Every request, not only those with a credential: the body (a
//! conversation, sync documents) is as private, and no endpoint we speak to relies on one. A
//! redirect comes back as an `opaqueredirect` answer and is reported as
//! [`TransportError::Redirected`]; what it means for the user is the engine's
//! (`engine::failure::redirected`, `engine::sync`).
//!
//! Written on plain web-sys rather than gloo-net: gloo-net's `Response` has no incremental body
//! reader.

mod text;
pub use text::{fetch_text, reachable, TextLimits};

use crate::engine::request::HttpRequest;
use gloo_timers::future::TimeoutFuture;
use js_sys::Uint8Array;
use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{
    AbortController, Headers, ReadableStreamDefaultReader, ReadableStreamReadResult, RequestInit,
    RequestRedirect, Response, ResponseType,
};

/// Longest error body we read into memory.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// What went wrong on the wire. Turned into a user-facing `engine::failure::Failure` by the session.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum TransportError {
    /// fetch rejected before a response: offline, DNS, refused, or blocked by CORS.
    #[error("could not reach the endpoint: {0}")]
    Network(String),
    /// The server answered with a non-2xx status.
    #[error("the endpoint answered HTTP {status}")]
    Http {
        status: u16,
        retry_after: Option<String>,
        body: String,
    },
    /// No first byte (`first_byte`) or an idle gap longer than the limit.
    #[error("the endpoint stopped answering")]
    Timeout { first_byte: bool },
    /// The user pressed stop.
    #[error("stopped")]
    Aborted,
    /// The body stream failed mid-way (connection dropped).
    #[error("the connection dropped: {0}")]
    Body(String),
    /// The body passed the caller's cap (`TextLimits::max_bytes`); the request was aborted.
    #[error("the answer was larger than {limit} bytes")]
    TooLarge { limit: usize },
    /// The whole answer took longer than the caller's limit (`TextLimits::total_ms`), however
    /// steadily it came; the request was aborted.
    #[error("the answer took longer than {limit_ms} ms")]
    TooSlow { limit_ms: u32 },
    /// The server answered with a redirect, which is not followed: nothing was sent past it.
    #[error("the server answered with a redirect, which is not followed with your credentials: use the final address in Settings")]
    Redirected,
}

/// Time limits for one request, in milliseconds.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    pub first_byte_ms: u32,
    pub idle_ms: u32,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            first_byte_ms: 60_000,
            idle_ms: 60_000,
        }
    }
}

/// Stops a request in flight. Cheap to clone; stopping twice is harmless.
#[derive(Clone)]
pub struct Stopper(AbortController);

impl Stopper {
    pub fn new() -> Self {
        Stopper(
            AbortController::new()
                .expect("AbortController is available in every supported browser"),
        )
    }
    pub fn stop(&self) {
        self.0.abort();
    }
    pub fn is_stopped(&self) -> bool {
        self.0.signal().aborted()
    }
    /// Calls `f` when stopped (a wait that Stop must end: a tool call waiting or running).
    pub fn on_stop(&self, f: &js_sys::Function) {
        let signal = self.0.signal();
        signal.add_event_listener_with_callback("abort", f).ok();
    }
}

impl Default for Stopper {
    fn default() -> Self {
        Self::new()
    }
}

/// A response whose body is read chunk by chunk.
pub struct BodyStream {
    /// The response's HTTP status.
    pub status: u16,
    reader: ReadableStreamDefaultReader,
    stopper: Stopper,
    timeouts: Timeouts,
    got_first: bool,
    /// The read in flight: a wait that ended first leaves it here, and the next call goes on with it
    /// (a read is never dropped, or its chunk would be lost).
    pending: Option<JsFuture>,
    /// When the next byte is due (`Date.now()` ms): first-byte limit, then idle limit after each chunk.
    read_by: f64,
}

/// What one wait on a body gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Read {
    Chunk(Vec<u8>),
    /// The body is complete.
    End,
    /// The caller's wake-up time came first; the read goes on at the next call.
    Woke,
}

/// Sends `req`; resolves once the status and headers arrived (or fails).
/// Non-2xx answers become `TransportError::Http` with the (capped) body text; a redirect is
/// not followed and becomes `TransportError::Redirected`.
pub async fn open(
    req: &HttpRequest,
    stopper: &Stopper,
    timeouts: Timeouts,
) -> Result<BodyStream, TransportError> {
    let init = RequestInit::new();
    init.set_method(&req.method);
    let headers = Headers::new()
        .map_err(js_text)
        .map_err(TransportError::Network)?;
    for (k, v) in &req.headers {
        headers
            .append(k, v)
            .map_err(|e| TransportError::Network(js_text(e)))?;
    }
    init.set_headers(&headers);
    if req.method != "GET" {
        init.set_body(&JsValue::from_str(&req.body));
    }
    init.set_signal(Some(&stopper.0.signal()));
    init.set_redirect(RequestRedirect::Manual);
    let window = web_sys::window().ok_or_else(|| TransportError::Network("no window".into()))?;
    let mut fetch = JsFuture::from(window.fetch_with_str_and_init(&req.url, &init));
    let resp = match first(&mut fetch, timeouts.first_byte_ms, stopper).await {
        None => return Err(TransportError::Timeout { first_byte: true }),
        Some(r) => r.map_err(|e| classify_rejection(e, stopper, TransportError::Network))?,
    };
    let resp: Response = resp.dyn_into().map_err(|_| {
        TransportError::Network("fetch returned something that is not a Response".into())
    })?;
    if resp.type_() == ResponseType::Opaqueredirect {
        return Err(TransportError::Redirected);
    }
    let status = resp.status();
    let body = resp
        .body()
        .ok_or_else(|| TransportError::Body("the response has no body".into()))?;
    let reader: ReadableStreamDefaultReader = body
        .get_reader()
        .dyn_into()
        .map_err(|_| TransportError::Body("cannot read the response body".into()))?;
    let mut stream = BodyStream {
        status,
        reader,
        stopper: stopper.clone(),
        timeouts,
        got_first: false,
        pending: None,
        read_by: js_sys::Date::now() + f64::from(timeouts.first_byte_ms),
    };
    if !(200..300).contains(&status) {
        let retry_after = resp.headers().get("retry-after").ok().flatten();
        let body = stream.read_text(MAX_ERROR_BODY).await.unwrap_or_default();
        return Err(TransportError::Http {
            status,
            retry_after,
            body,
        });
    }
    Ok(stream)
}

/// An answer of any status: its status, the headers asked for (absent or hidden by CORS: `None`),
/// and its body (`None`: the response has none, a 204's).
pub struct Answer {
    pub status: u16,
    pub headers: Vec<Option<String>>,
    pub body: Option<BodyStream>,
}

/// Sends `req`; resolves once the status and headers arrived, whatever the status (the caller
/// reads an error's body itself): `names`' headers in that order. A redirect is not followed
/// ([`TransportError::Redirected`]).
pub async fn open_any(
    req: &HttpRequest,
    stopper: &Stopper,
    timeouts: Timeouts,
    names: &[&str],
) -> Result<Answer, TransportError> {
    let init = RequestInit::new();
    init.set_method(&req.method);
    let headers = Headers::new().map_err(|e| TransportError::Network(js_text(e)))?;
    for (k, v) in &req.headers {
        headers
            .append(k, v)
            .map_err(|e| TransportError::Network(js_text(e)))?;
    }
    init.set_headers(&headers);
    if req.method != "GET" {
        init.set_body(&JsValue::from_str(&req.body));
    }
    init.set_signal(Some(&stopper.0.signal()));
    init.set_redirect(RequestRedirect::Manual);
    let window = web_sys::window().ok_or_else(|| TransportError::Network("no window".into()))?;
    let mut fetch = JsFuture::from(window.fetch_with_str_and_init(&req.url, &init));
    let resp = match first(&mut fetch, timeouts.first_byte_ms, stopper).await {
        None => return Err(TransportError::Timeout { first_byte: true }),
        Some(r) => r.map_err(|e| classify_rejection(e, stopper, TransportError::Network))?,
    };
    let resp: Response = resp.dyn_into().map_err(|_| {
        TransportError::Network("fetch returned something that is not a Response".into())
    })?;
    // An `opaqueredirect` answer is the only one with status 0 (read so, not by its type: the
    // first screen's `open` keeps that reading to itself).
    if resp.status() == 0 {
        return Err(TransportError::Redirected);
    }
    let h = resp.headers();
    let reader = resp.body().and_then(|b| {
        b.get_reader()
            .dyn_into::<ReadableStreamDefaultReader>()
            .ok()
    });
    Ok(Answer {
        status: resp.status(),
        headers: names.iter().map(|n| h.get(n).ok().flatten()).collect(),
        body: reader.map(|reader| BodyStream {
            status: resp.status(),
            reader,
            stopper: stopper.clone(),
            timeouts,
            got_first: false,
            pending: None,
            read_by: js_sys::Date::now() + f64::from(timeouts.first_byte_ms),
        }),
    })
}

impl BodyStream {
    /// The next chunk, or the end of the body, or [`Read::Woke`] once `wake_in_ms` passed without
    /// either. One timer is armed for whichever comes first, the wake-up or the first-byte/idle
    /// limit, and it is cleared as soon as the read settles. Past the limit the request is stopped:
    /// [`TransportError::Timeout`].
    pub async fn read_within(&mut self, wake_in_ms: Option<u32>) -> Result<Read, TransportError> {
        let limit_in = (self.read_by - js_sys::Date::now()).max(0.0) as u32;
        let wait = wake_in_ms.map_or(limit_in, |w| w.min(limit_in));
        let stopper = self.stopper.clone();
        let read = self
            .pending
            .get_or_insert_with(|| JsFuture::from(self.reader.read()));
        let Some(result) = first(read, wait, &stopper).await else {
            if js_sys::Date::now() < self.read_by {
                return Ok(Read::Woke);
            }
            self.pending = None;
            self.stopper.stop();
            return Err(TransportError::Timeout {
                first_byte: !self.got_first,
            });
        };
        self.pending = None;
        let result =
            result.map_err(|e| classify_rejection(e, &self.stopper, TransportError::Body))?;
        let result: ReadableStreamReadResult = result.unchecked_into();
        if result.get_done().unwrap_or(true) {
            return Ok(Read::End);
        }
        let bytes = result
            .get_value()
            .dyn_into::<Uint8Array>()
            .map(|a| a.to_vec())
            .unwrap_or_default();
        self.got_first = true;
        self.read_by = js_sys::Date::now() + f64::from(self.timeouts.idle_ms);
        Ok(Read::Chunk(bytes))
    }

    /// The next chunk of the body, or `None` at its end.
    pub async fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, TransportError> {
        loop {
            match self.read_within(None).await? {
                Read::Chunk(bytes) => return Ok(Some(bytes)),
                Read::End => return Ok(None),
                Read::Woke => {}
            }
        }
    }

    /// Reads the rest of the body as (lossy) text, at most `cap` bytes.
    pub async fn read_text(&mut self, cap: usize) -> Result<String, TransportError> {
        let mut out = Vec::new();
        while let Some(chunk) = self.next_chunk().await? {
            let room = cap.saturating_sub(out.len());
            out.extend_from_slice(&chunk[..chunk.len().min(room)]);
            if out.len() >= cap {
                let _ = self.reader.cancel();
                break;
            }
        }
        Ok(String::from_utf8_lossy(&out).into_owned())
    }
}

/// Waits for `promise` at most `ms`: `None` when the time ran out first (the promise is left as it
/// is, still pending). The timer is a `gloo-timers` one, cleared when this returns.
async fn first(
    promise: &mut JsFuture,
    ms: u32,
    stopper: &Stopper,
) -> Option<Result<JsValue, JsValue>> {
    if stopper.is_stopped() {
        return Some(Err(JsValue::from_str("AbortError")));
    }
    let mut timer = TimeoutFuture::new(ms);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(r) = Pin::new(&mut *promise).poll(cx) {
            return Poll::Ready(Some(r));
        }
        Pin::new(&mut timer).poll(cx).map(|()| None)
    })
    .await
}

fn classify_rejection(
    e: JsValue,
    stopper: &Stopper,
    other: fn(String) -> TransportError,
) -> TransportError {
    if stopper.is_stopped() {
        TransportError::Aborted
    } else {
        other(js_text(e))
    }
}

/// A short text for a JS error value.
pub fn js_text(e: JsValue) -> String {
    if let Some(err) = e.dyn_ref::<js_sys::Error>() {
        return String::from(err.message());
    }
    e.as_string().unwrap_or_else(|| format!("{e:?}"))
}
