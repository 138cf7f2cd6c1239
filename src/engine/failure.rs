//! What went wrong with a request, classified into kinds the engine can act on and messages a user
//! can act on. Input is plain data (status, headers, body text, transport failure kind).
//! Must not import anything outside `crate::engine`.
//!
//! A failure speaks in two parts: [`Failure::message`], one line a person understands ("Can't reach
//! the server at 127.0.0.1:9. Is it running?"), and [`Failure::fix`], what to change on their server
//! or in Settings, with the server's own words (the banner's "How to fix"). They travel as one text,
//! [`Failure::text`]: the line, then the fix after a line break; [`split_text`] takes them apart.
//!
//! Entry points: [`classify_http`] (an error response), [`network_failure`] (fetch rejected: offline
//! or CORS, with the CORS switches of the usual local servers), [`redirected`] (a redirect, which
//! requests never follow: README "Credentials"), [`timeout`], [`aborted`] and
//! [`from_stream_error`] (an `Error` event from a decoder). `SessionGone` is only ever returned for a
//! request that was resuming a remote session. Server text is never echoed raw: it goes through
//! [`sanitize_snippet`] (tags and script/style content removed, whitespace folded, length capped).
//! The small HTML stripper and the IMF-fixdate parser (`Retry-After`) are written here because the
//! engine's dependencies are fixed (serde, serde_json, thiserror) and both jobs are a few lines.

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
    /// The prompt was longer than the server's context (`engine::context_window`): its size and
    /// the prompt's, in tokens, where the server said them.
    ContextTooLong {
        window: Option<u32>,
        prompt_tokens: Option<u32>,
    },
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
    /// The server refused the request because it offered tools (`engine::tools::tools_refused`):
    /// the same turn goes again without them, and this model is offered none from then on.
    ToolsRefused,
    /// The endpoint answered with a redirect, which is never followed (a redirect would carry the
    /// key, and the conversation, to an address the user never entered): only Settings can fix it.
    Redirected,
}

/// A classified failure with a user-facing message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub kind: FailureKind,
    /// One line that says what happened (and, when it is short, what to do).
    pub message: String,
    /// How to fix it, for "How to fix": the server's settings (CORS), Settings, what the server said.
    pub fix: Option<String>,
    /// HTTP status, when there was a response.
    pub status: Option<u16>,
}

use serde_json::Value;

use crate::engine::context_window::{self, Overflow};
use crate::engine::decode::{StreamError, CODE_CUT_OFF, CODE_MALFORMED};
use crate::engine::format;
use crate::engine::format::days_from_civil;
use crate::engine::model::Millis;

/// Longest server text quoted in a message, in characters.
const DETAIL_CHARS: usize = 300;

impl Failure {
    fn new(kind: FailureKind, message: String, status: Option<u16>) -> Failure {
        Failure {
            kind,
            message,
            fix: None,
            status,
        }
    }

    /// The same failure with `fix` (none when it is blank).
    fn with_fix(mut self, fix: impl Into<String>) -> Failure {
        let fix = fix.into();
        let fix = fix.trim();
        self.fix = (!fix.is_empty()).then(|| fix.to_string());
        self
    }

    /// The line, then the fix after a line break: what errors carry to the one status area.
    pub fn text(&self) -> String {
        match &self.fix {
            Some(fix) => format!("{}\n{fix}", self.message),
            None => self.message.clone(),
        }
    }
}

/// A problem's text taken apart: its first line (what is shown) and the rest ("How to fix"), none
/// when there is no rest. Any error text reads this way; only failures have a rest.
pub fn split_text(text: &str) -> (&str, Option<&str>) {
    match text.split_once('\n') {
        Some((line, rest)) if !rest.trim().is_empty() => (line.trim_end(), Some(rest.trim())),
        Some((line, _)) => (line.trim_end(), None),
        None => (text, None),
    }
}

/// Classifies an HTTP error response. `retry_after` is the `Retry-After` header (seconds or an HTTP
/// date, read against `now`); `resuming` says the request continued a remote session
/// (`previous_response_id`), so a 4xx about that id means the session is gone. What the server
/// said goes in the fix, never in the line.
pub fn classify_http(
    status: u16,
    retry_after: Option<&str>,
    body: &str,
    resuming: bool,
    now: Millis,
) -> Failure {
    let (code, detail) = body_detail(body);
    let said = detail
        .as_deref()
        .map(|d| format!("The server said: \"{d}\""))
        .unwrap_or_default();
    let status_text = format!("HTTP {status}");
    if resuming
        && (400..500).contains(&status)
        && (is_session_gone_text(body) || is_session_gone(code.as_deref(), detail.as_deref()))
    {
        return Failure::new(
            FailureKind::SessionGone,
            format!(
                "The server no longer knows this conversation's previous reply ({status_text}); \
                 the history has to be sent again."
            ),
            Some(status),
        )
        .with_fix(said);
    }
    if let Some(o) = context_window::overflow(status, body) {
        return too_long(o, &status_text, status)
            .with_fix(format!("{} {said}", too_long_fix(o.window)));
    }
    if crate::engine::tools::tools_refused(status, body) {
        return Failure::new(
            FailureKind::ToolsRefused,
            format!("The server does not take tools for this model ({status_text})."),
            Some(status),
        )
        .with_fix(format!(
            "Memoire sends this model no tools from now on (the memory tools and MCP servers' \
             tools are not offered to it); a model or server that supports tool calling gets them. \
             {said}"
        ));
    }
    let (kind, message, fix) = http_parts(status, &status_text, retry_after, now);
    Failure::new(kind, message, Some(status)).with_fix(format!("{fix} {said}"))
}

/// A refusal of a prompt longer than the server's context.
fn too_long(o: Overflow, status_text: &str, status: u16) -> Failure {
    let message = match o.window {
        Some(n) => format!(
            "The prompt was longer than the server's context of {} tokens ({status_text}).",
            format::count(u64::from(n))
        ),
        None => format!("The prompt was longer than the server's context ({status_text})."),
    };
    Failure::new(
        FailureKind::ContextTooLong {
            window: o.window,
            prompt_tokens: o.prompt_tokens,
        },
        message,
        Some(status),
    )
}

/// What to do about a context that is too small, `window` tokens when the server said.
fn too_long_fix(window: Option<u32>) -> String {
    const LARGER: &str = "For more of the conversation in each prompt, start the server with a \
                          larger context (llama-server: --ctx-size; llama-cpp-python: --n_ctx; LM \
                          Studio: the model's context length).";
    match window {
        Some(n) => format!(
            "Prompts to this server are now built for {} tokens; what no longer fits stays in the \
             chat and in memory. {LARGER}",
            format::count(u64::from(n))
        ),
        None => format!(
            "Lower \"Context size\" in Settings (Advanced) to what the server holds. {LARGER}"
        ),
    }
}

/// The kind, the line and the fix (before what the server said) of an error status.
fn http_parts(
    status: u16,
    status_text: &str,
    retry_after: Option<&str>,
    now: Millis,
) -> (FailureKind, String, &'static str) {
    match status {
        401 | 403 => (
            FailureKind::Auth,
            format!("The server refused the API key ({status_text}). Check the API key in Settings."),
            "Copy the key again from your provider's page, paste it in Settings and save. A local \
             server usually needs no key: leave the field empty.",
        ),
        404 => (
            FailureKind::NotFound,
            format!("The server answered {status_text} Not Found: check the address and the model in Settings."),
            "The address usually ends in /v1 (OpenAI-compatible servers) and has no /chat/completions \
             at the end; the model must be one the server has (Settings lists them after \"Test \
             connection\").",
        ),
        429 => {
            let secs = retry_after.and_then(|v| parse_retry_after(v, now));
            let when = match secs {
                Some(0) => "Try again now.".to_string(),
                Some(1) => "Try again in 1 second.".to_string(),
                Some(s) => format!("Try again in {s} seconds."),
                None => "Wait a moment and try again.".to_string(),
            };
            (
                FailureKind::RateLimited {
                    retry_after_secs: secs,
                },
                format!("The server is rate limiting requests ({status_text}). {when}"),
                "Your plan with the provider may allow fewer requests or tokens per minute than this \
                 conversation uses.",
            )
        }
        413 => (
            FailureKind::BadRequest,
            format!("The request was too large for the server ({status_text}): lower the context size in Settings."),
            "",
        ),
        500..=599 => (
            FailureKind::Server,
            format!("Server error ({status_text}). Try again in a moment."),
            "If it keeps failing, look at the server's own log: it may still be loading the model, \
             be out of memory, or the model may not fit its context size.",
        ),
        400..=499 => (
            FailureKind::BadRequest,
            format!("The server rejected the request ({status_text})."),
            "Check the protocol and the model in Settings.",
        ),
        _ => (
            FailureKind::BadRequest,
            format!("The server answered with an unexpected status ({status_text})."),
            "Check the address and the protocol in Settings.",
        ),
    }
}

/// `fetch` failed before any response: offline, wrong address, or blocked by CORS (the browser does
/// not say which). The line names the server; the fix explains the CORS settings of the usual local
/// servers.
pub fn network_failure(base_url: &str) -> Failure {
    let (host, port, plain_http) = host_port(base_url);
    let place = match &port {
        Some(p) => format!("{host}:{p}"),
        None if host.is_empty() => sanitize_snippet(base_url, 80),
        None => host.clone(),
    };
    let place = sanitize_snippet(&place, 80);
    let message = format!("Can't reach the server at {place}. Is it running?");
    let url = sanitize_snippet(base_url, 120);
    let mut fix = format!(
        "Check that the server is running and that the address in Settings ({url}) is right."
    );
    if is_local(&host) {
        let hint = match port.as_deref() {
            Some("11434") => Some(
                " This looks like Ollama: start it with OLLAMA_ORIGINS set to this page's origin \
                 (or OLLAMA_ORIGINS=*) so the browser may call it.",
            ),
            Some("1234") => {
                Some(" This looks like LM Studio: turn on \"Enable CORS\" in its server settings.")
            }
            _ => None,
        };
        if let Some(hint) = hint {
            fix.push_str(hint);
        }
        fix.push_str(
            " A web page may only call a local server that allows it (CORS): Ollama needs \
             OLLAMA_ORIGINS, LM Studio needs its \"Enable CORS\" switch, vLLM takes --allowed-origins, \
             and llama.cpp's llama-server allows any origin unless a proxy in front of it does not.",
        );
    } else {
        fix.push_str(
            " If you are online, the server may not accept requests from web pages (CORS): use one \
             that sends Access-Control-Allow-Origin, or a proxy that adds it.",
        );
        if plain_http {
            fix.push_str(
                " A page served over https cannot call a plain http:// address other than localhost.",
            );
        }
    }
    Failure::new(FailureKind::Network, message, None).with_fix(fix)
}

/// The line of a redirect refused (a request never follows one: it could carry a credential, and
/// the conversation, to an address the user never entered).
pub const REDIRECT_REFUSED: &str = "The endpoint answered with a redirect; Memoire does not \
    follow it with your key. Use the final address in Settings.";

/// The same refusal from the sync server, in the words of sync's errors (`sync::replicate`'s
/// `SyncError`, `sync::probe`'s `Problem`, the session's `SealError`), which begin in lower case.
pub const SYNC_REDIRECT_REFUSED: &str = "the sync server answered with a redirect; Memoire does \
    not follow it with your password. Use the final address in Settings → Sync";

/// The endpoint at `base_url` answered with a redirect (the transport saw it and did not follow
/// it; the browser does not say where it pointed). Nothing was sent past it.
pub fn redirected(base_url: &str) -> Failure {
    let url = sanitize_snippet(base_url, 120);
    Failure::new(FailureKind::Redirected, REDIRECT_REFUSED.into(), None).with_fix(format!(
        "Open {url} in a browser tab to see where it leads (often https:// instead of http://, \
         another host name, or a path with a trailing /) and put that address in Settings. \
         Following the redirect would send your API key and your conversation to an address \
         you never entered."
    ))
}

/// No first byte (`first_byte`), or an idle gap mid-stream, longer than the limit.
pub fn timeout(first_byte: bool) -> Failure {
    if first_byte {
        Failure::new(
            FailureKind::Timeout,
            "The server did not start answering in time. Try again.".into(),
            None,
        )
        .with_fix("It may still be loading the model, or be busy with another request.")
    } else {
        Failure::new(
            FailureKind::Timeout,
            "The reply stalled: no data arrived for too long. The partial reply was kept; try again."
                .into(),
            None,
        )
    }
}

/// The connection dropped while the body was being read (server gone, network lost).
pub fn connection_dropped(detail: &str) -> Failure {
    let detail = sanitize_snippet(detail, 120);
    let detail = if detail.is_empty() {
        String::new()
    } else {
        format!(" ({detail})")
    };
    Failure::new(
        FailureKind::Network,
        format!(
            "The connection dropped while the reply was arriving{detail}. The partial reply was kept; \
             try again."
        ),
        None,
    )
}

/// A request not sent because its key would go where it must not (`request::KeyRefused`).
pub fn key_refused(refused: &crate::engine::request::KeyRefused) -> Failure {
    Failure::new(FailureKind::Auth, refused.to_string(), None)
}

/// How the error text of a reply the user stopped begins.
pub const STOPPED_PREFIX: &str = "Stopped.";

/// The user pressed stop.
pub fn aborted() -> Failure {
    Failure::new(
        FailureKind::Aborted,
        format!("{STOPPED_PREFIX} The partial reply was kept."),
        None,
    )
}

/// Whether a reply's error text says the user stopped it (rather than it being cut off).
pub fn was_stopped(error: Option<&str>) -> bool {
    error.is_some_and(|e| e.starts_with(STOPPED_PREFIX))
}

/// An `Error` event from a decoder: the line says what it means, the fix quotes the server.
pub fn from_stream_error(error: &StreamError, resuming: bool) -> Failure {
    let code = error.code.as_deref();
    let detail = sanitize_snippet(&error.message, DETAIL_CHARS);
    let said = format!("The server said: \"{detail}\"");
    if resuming && is_session_gone(code, Some(&error.message)) {
        return Failure::new(
            FailureKind::SessionGone,
            "The server no longer knows this conversation's previous reply; the history has to be \
             sent again."
                .into(),
            None,
        )
        .with_fix(said);
    }
    let (kind, message, fix) = match code {
        Some(CODE_CUT_OFF) => (
            FailureKind::Malformed,
            "The reply was cut off before its end. The partial reply was kept; try again."
                .to_string(),
            detail,
        ),
        Some(CODE_MALFORMED) => (
            FailureKind::Malformed,
            "The reply was not in the format of the protocol set in Settings.".to_string(),
            format!("Check that the protocol in Settings matches the server. {detail}"),
        ),
        Some("rate_limit_exceeded" | "rate_limit_error") => (
            FailureKind::RateLimited {
                retry_after_secs: None,
            },
            "The server is rate limiting requests. Wait a moment and try again.".to_string(),
            said,
        ),
        Some("authentication_error" | "invalid_api_key" | "permission_error") => (
            FailureKind::Auth,
            "The server refused the API key. Check the API key in Settings.".to_string(),
            said,
        ),
        Some("overloaded_error" | "server_error" | "api_error" | "internal_error") => (
            FailureKind::Server,
            "Server error during the reply. Try again in a moment.".to_string(),
            said,
        ),
        _ => (
            FailureKind::Stream,
            "The server reported an error during the reply.".to_string(),
            said,
        ),
    };
    Failure::new(kind, message, None).with_fix(fix)
}

/// Whether an error code or message says the remote session (previous response id) is unknown.
pub fn is_session_gone(code: Option<&str>, message: Option<&str>) -> bool {
    code == Some("previous_response_not_found")
        || message.is_some_and(|m| {
            let m = m.to_ascii_lowercase();
            m.contains("previous_response_not_found")
                || ((m.contains("previous response") || m.contains("previous_response_id"))
                    && [
                        "not found",
                        "does not exist",
                        "unknown",
                        "expired",
                        "invalid",
                        "no longer",
                    ]
                    .iter()
                    .any(|w| m.contains(w)))
        })
}

/// A 4xx body that is about `previous_response_id` (e.g. `"param": "previous_response_id"`).
fn is_session_gone_text(body: &str) -> bool {
    let b = body.to_ascii_lowercase();
    b.contains("previous_response_not_found") || b.contains("previous_response_id")
}

/// `Retry-After`: delay-seconds, or an IMF-fixdate (`Wed, 21 Oct 2015 07:28:00 GMT`) read against
/// `now`. A date in the past means "now" (0).
pub fn parse_retry_after(value: &str, now: Millis) -> Option<u32> {
    let value = value.trim();
    // serde_json's number reader, not `str::parse::<f64>`: that one brings core's 10 KB (brotli) table
    // of powers of five into the first download for these three call sites (`scripts/size.sh`).
    if let Ok(secs) = serde_json::from_str::<f64>(value) {
        return (secs.is_finite() && secs >= 0.0).then(|| secs.ceil().min(u32::MAX as f64) as u32);
    }
    let at = parse_http_date(value)?;
    let delta_ms = at.saturating_sub(now);
    let secs = (delta_ms.max(0) + 999) / 1000;
    Some(u32::try_from(secs).unwrap_or(u32::MAX))
}

/// Milliseconds since the epoch of an IMF-fixdate.
fn parse_http_date(value: &str) -> Option<Millis> {
    let parts: Vec<&str> = value.split_whitespace().collect();
    let [_weekday, day, month, year, time, zone] = parts.as_slice() else {
        return None;
    };
    if !zone.eq_ignore_ascii_case("GMT") && *zone != "UTC" {
        return None;
    }
    const MONTHS: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    let month = MONTHS.iter().position(|m| m.eq_ignore_ascii_case(month))? as i64 + 1;
    let day: i64 = day.parse().ok().filter(|d| (1..=31).contains(d))?;
    let year: i64 = year.parse().ok().filter(|y| (1970..=9999).contains(y))?;
    let hms: Vec<i64> = time
        .split(':')
        .map(|p| p.parse::<i64>().ok())
        .collect::<Option<_>>()?;
    let [h, m, s] = hms.as_slice() else {
        return None;
    };
    if !(0..24).contains(h) || !(0..60).contains(m) || !(0..61).contains(s) {
        return None;
    }
    let days = days_from_civil(year, month, day);
    Some(((days * 86_400) + h * 3600 + m * 60 + s) * 1000)
}

/// The error code and message of a JSON error body, in the shapes endpoints use:
/// `{"error": {"message", "code"|"type"}}` (OpenAI, vLLM, llama.cpp, Anthropic), `{"error": "..."}`
/// (Ollama), `{"message", "code"}` (Responses `error` event), `{"detail": "..."}` (FastAPI servers).
pub fn error_parts(value: &Value) -> (Option<String>, Option<String>) {
    let Value::Object(map) = value else {
        return (None, value.as_str().map(str::to_string));
    };
    let code = || {
        match map.get("code") {
            Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        }
        .or_else(|| {
            map.get("type")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty() && *t != "error")
                .map(str::to_string)
        })
    };
    let message = || {
        ["message", "detail", "error_description"]
            .iter()
            .find_map(|k| map.get(*k).and_then(Value::as_str))
            .filter(|m| !m.trim().is_empty())
            .map(str::to_string)
    };
    match map.get("error") {
        Some(inner @ Value::Object(_)) => {
            let (c, m) = error_parts(inner);
            (c.or_else(code), m.or_else(message))
        }
        Some(Value::String(s)) if !s.trim().is_empty() => (code(), Some(s.clone())),
        _ => (code(), message()),
    }
}

/// Code and readable detail of an HTTP error body (JSON or not), sanitised.
fn body_detail(body: &str) -> (Option<String>, Option<String>) {
    let (code, text) = match serde_json::from_str::<Value>(body) {
        Ok(value @ Value::Object(_)) => {
            let (code, message) = error_parts(&value);
            (code, message)
        }
        _ => (None, Some(body.to_string())),
    };
    let detail = text
        .map(|t| sanitize_snippet(&t, DETAIL_CHARS))
        .filter(|d| !d.is_empty());
    (code, detail)
}

/// Server text made safe to show: HTML tags (and the content of `script`/`style`) removed, a few
/// entities decoded (`&lt;`/`&gt;` stay escaped), control characters and runs of whitespace folded
/// to one space, and at most `max_chars` characters (an ellipsis marks the cut).
pub fn sanitize_snippet(text: &str, max_chars: usize) -> String {
    let stripped = strip_tags(text);
    let decoded = stripped
        .replace("&nbsp;", " ")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&apos;", "'")
        .replace("&amp;", "&");
    let mut out = String::with_capacity(decoded.len().min(max_chars.saturating_mul(4)));
    let mut count = 0;
    let mut pending_space = false;
    for c in decoded.chars() {
        if c.is_whitespace() || c.is_control() {
            pending_space = count > 0;
            continue;
        }
        if pending_space {
            out.push(' ');
            count += 1;
            pending_space = false;
        }
        out.push(c);
        count += 1;
        if count > max_chars {
            // Too long: keep max_chars - 1 characters and mark the cut.
            let keep: String = out.chars().take(max_chars.saturating_sub(1)).collect();
            return format!("{}…", keep.trim_end());
        }
    }
    out
}

fn strip_tags(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('<') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let is_tag = after
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || matches!(c, '/' | '!' | '?'));
        if !is_tag {
            out.push('<');
            rest = after;
            continue;
        }
        let name: String = after
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
            .to_ascii_lowercase();
        let Some(end) = after.find('>') else {
            // An unclosed tag: drop the rest rather than echo it.
            return collapse_end(out);
        };
        rest = &after[end + 1..];
        if name == "script" || name == "style" {
            let close = format!("</{name}");
            match find_ascii_ci(rest, &close) {
                Some(j) => {
                    let tail = &rest[j..];
                    rest = tail.find('>').map_or("", |k| &tail[k + 1..]);
                }
                None => return collapse_end(out),
            }
        }
        out.push(' ');
    }
    out.push_str(rest);
    out
}

fn collapse_end(mut out: String) -> String {
    out.push(' ');
    out
}

fn find_ascii_ci(haystack: &str, needle: &str) -> Option<usize> {
    let h = haystack.as_bytes();
    let n = needle.as_bytes();
    (0..=h.len().checked_sub(n.len())?).find(|&i| h[i..i + n.len()].eq_ignore_ascii_case(n))
}

/// Host (lowercase, without brackets), port and whether the scheme is plain http.
fn host_port(url: &str) -> (String, Option<String>, bool) {
    let url = url.trim();
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let (host, port) = if let Some(stripped) = authority.strip_prefix('[') {
        match stripped.split_once(']') {
            Some((h, p)) => (h, p.strip_prefix(':')),
            None => (stripped, None),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    (
        host.to_ascii_lowercase(),
        port.filter(|p| !p.is_empty()).map(str::to_string),
        scheme.eq_ignore_ascii_case("http"),
    )
}

fn is_local(host: &str) -> bool {
    if host == "localhost" || host.ends_with(".localhost") || host.ends_with(".local") {
        return true;
    }
    if host == "::1" || host == "0.0.0.0" {
        return true;
    }
    let octets: Vec<u8> = host.split('.').filter_map(|p| p.parse().ok()).collect();
    match octets.as_slice() {
        [127, ..] | [10, ..] | [192, 168, ..] => octets.len() == 4,
        [172, b, ..] => octets.len() == 4 && (16..=31).contains(b),
        _ => false,
    }
}
