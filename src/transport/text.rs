//! A whole-body request for small JSON exchanges (the sync driver's CouchDB calls): method, URL,
//! optional JSON body and `Authorization`, an optional `AbortController`, and limits: the body is
//! read as a stream through `super::open` with the first-byte and idle timeouts of [`TextLimits`],
//! a byte cap and a limit on the whole answer's time, and the request is aborted when one is passed
//! (`TransportError::Timeout`, `TooLarge`, `TooSlow`), so a server that never answers, answers
//! without end or trickles its answer cannot hold the caller or grow the tab's memory. Returns the
//! status and the body text (an answer that is not 2xx too, its body capped like every error
//! body). A redirect is never followed (`super::open`): `TransportError::Redirected`. Also a
//! `no-cors` reachability probe within a time limit (no credential, no body: it may follow one).
//! Streaming replies use `super::open` directly.
//! Must not import `store`, `session` or `ui`.

use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

use super::{first, open, Read, Stopper, Timeouts, TransportError};
use crate::engine::request::HttpRequest;

/// The limits of one whole-body request.
#[derive(Debug, Clone, Copy)]
pub struct TextLimits {
    /// The largest body read; past it the request is aborted.
    pub max_bytes: usize,
    pub timeouts: Timeouts,
    /// The longest the whole answer may take, from the request on.
    pub total_ms: u32,
}

/// One request; `Err` is a network-level failure, a time-out, a body over the cap, or an abort.
pub async fn fetch_text(
    url: &str,
    method: &str,
    body: Option<&str>,
    auth: Option<&str>,
    abort: Option<&web_sys::AbortController>,
    limits: TextLimits,
) -> Result<(u16, String), TransportError> {
    let mut headers = vec![("Accept".to_string(), "application/json".to_string())];
    if body.is_some() {
        headers.push(("Content-Type".into(), "application/json".into()));
    }
    if let Some(a) = auth {
        headers.push(("Authorization".into(), a.to_string()));
    }
    let req = HttpRequest {
        method: method.to_string(),
        url: url.to_string(),
        headers,
        body: body.unwrap_or_default().to_string(),
    };
    let stopper = abort.map_or_else(Stopper::new, |a| Stopper(a.clone()));
    let deadline = js_sys::Date::now() + f64::from(limits.total_ms);
    let mut stream = match open(&req, &stopper, limits.timeouts).await {
        Ok(s) => s,
        Err(TransportError::Http { status, body, .. }) => return Ok((status, body)),
        Err(e) => {
            if matches!(e, TransportError::Timeout { .. }) {
                stopper.stop(); // the request no one waits for any more
            }
            return Err(e);
        }
    };
    let status = stream.status;
    let mut out: Vec<u8> = Vec::new();
    loop {
        let left = (deadline - js_sys::Date::now()).max(0.0) as u32;
        let chunk = match stream.read_within(Some(left)).await? {
            Read::Chunk(chunk) => chunk,
            Read::End => break,
            Read::Woke if js_sys::Date::now() < deadline => continue,
            Read::Woke => {
                stopper.stop();
                return Err(TransportError::TooSlow {
                    limit_ms: limits.total_ms,
                });
            }
        };
        if out.len() + chunk.len() > limits.max_bytes {
            stopper.stop();
            return Err(TransportError::TooLarge {
                limit: limits.max_bytes,
            });
        }
        out.extend_from_slice(&chunk);
    }
    Ok((status, String::from_utf8_lossy(&out).into_owned()))
}

/// Whether anything answers at `url` (a `no-cors` `GET`, whose opaque answer proves the server is
/// there) within `timeout_ms`.
pub async fn reachable(url: &str, timeout_ms: u32) -> bool {
    let Some(window) = web_sys::window() else {
        return false;
    };
    let stopper = Stopper::new();
    let init = web_sys::RequestInit::new();
    init.set_method("GET");
    init.set_mode(web_sys::RequestMode::NoCors);
    init.set_signal(Some(&stopper.0.signal()));
    let mut fetch = JsFuture::from(window.fetch_with_str_and_init(url, &init));
    let answered = match first(&mut fetch, timeout_ms, &stopper).await {
        Some(Ok(r)) => r.dyn_into::<web_sys::Response>().is_ok(),
        _ => false,
    };
    stopper.stop();
    answered
}
