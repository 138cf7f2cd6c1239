//! A Model Context Protocol client for tools, sans-IO: the JSON-RPC 2.0 framing (requests with
//! ids the client counts, notifications, responses matched by id, errors with a user-facing line;
//! no batches), the Streamable HTTP transport with the older HTTP+SSE transport as fallback, the
//! lifecycle (`initialize`, `notifications/initialized`), `tools/list` (pages, and again on
//! `notifications/tools/list_changed`), `tools/call` (its content rendered as one untrusted text
//! for the model: [`render_result`]), cancellation, per-request timeouts, and the failures a user
//! can act on (CORS, mixed content, the token, a session id CORS hides, a body that is no MCP:
//! [`network_failure`], [`mixed_content`], [`http_failure`], [`session_header_hidden`],
//! [`unexpected_body`]). An MCP tool becomes a `tools::ToolDef` ([`tool_def`]).
//!
//! [`McpClient`] is a machine like `engine::turn::Turn`: the session calls its methods
//! ([`McpClient::connect`], [`McpClient::call_tool`], [`McpClient::cancel_call`],
//! [`McpClient::close`]), executes each [`McpAction::Http`] with fetch, feeds back the head
//! ([`McpClient::handle_head`]), the body's chunks as they arrive ([`McpClient::handle_body`],
//! [`McpClient::handle_end`]) or a fetch that failed ([`McpClient::handle_fetch_failed`]), and
//! ticks [`McpClient::handle_timeout`] at [`McpClient::poll_timeout`]. The clock is passed in
//! (`now`), ids are counters; no session, store or UI here.
//!
//! Protocol revisions: it offers [`LATEST_PROTOCOL_VERSION`] (2025-11-25, the newest revision
//! with the `initialize` handshake) and accepts a server's counter-offer of any of
//! [`SUPPORTED_PROTOCOL_VERSIONS`]; 2024-11-05 is the HTTP+SSE one. The 2026-07-28 revision
//! (stateless, no `initialize`, no sessions) is not spoken yet: servers of that revision that also
//! serve older clients answer this handshake.
//!
//! Sources relied on: the specification's `basic/transports` (Streamable HTTP: POST with
//! `Accept: application/json, text/event-stream`, a JSON or SSE answer, 202 for notifications,
//! `Mcp-Session-Id` from the initialize response echoed, 404 = session gone so initialize again,
//! `MCP-Protocol-Version` on every request after initialize, DELETE to end, 405 allowed; the
//! optional standing GET stream, opened once `notifications/initialized` is accepted, as the
//! TypeScript SDK does (405: the server has none), reconnected after its `retry` when it closes;
//! an answer stream closed before its answer resumed by GET with `Last-Event-ID` after the
//! stream's `retry`; the
//! backwards-compatibility rule: a 400/404/405 to the initialize POST means try GET for the
//! HTTP+SSE `endpoint` event), `basic/lifecycle` (version negotiation, `notifications/initialized`),
//! `basic/utilities/cancellation` (`notifications/cancelled` with `requestId` and `reason`),
//! `basic/utilities/ping`, `server/tools` (`tools/list` with `nextCursor`, `tools/call`, content
//! kinds text/image/audio/resource_link/resource, `isError`, `structuredContent`,
//! `notifications/tools/list_changed`), and the TypeScript SDK's client transports
//! (`src/client/streamableHttp.ts`, `src/client/sse.ts`: the endpoint URL resolved against the
//! server's and refused unless same origin).
//!
//! Must not import anything outside `crate::engine`.

use std::collections::{BTreeMap, VecDeque};

use serde_json::{json, Map, Value};

use crate::engine::decode::sse::SseParser;
use crate::engine::failure::{sanitize_snippet, Failure, FailureKind};
use crate::engine::model::Millis;
use crate::engine::tools::{ToolDef, ToolSource};

/// The revision offered in `initialize`.
pub const LATEST_PROTOCOL_VERSION: &str = "2025-11-25";
/// The revisions accepted from a server, newest first.
pub const SUPPORTED_PROTOCOL_VERSIONS: &[&str] =
    &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
/// What every POST accepts.
pub const ACCEPT_POST: &str = "application/json, text/event-stream";
/// The request headers a browser page sends an MCP server, which its CORS answer must allow.
pub const CORS_ALLOW_HEADERS: &str =
    "content-type, authorization, mcp-protocol-version, mcp-session-id, last-event-id";
/// JSON-RPC: the method does not exist (or is not offered).
pub const METHOD_NOT_FOUND: i64 = -32601;
/// How long to wait before resuming an answer stream the server closed without `retry`.
pub const DEFAULT_RETRY_MS: u64 = 1000;
/// Longest body kept to parse one JSON answer, or to quote an unexpected one.
const MAX_JSON_BODY: usize = 8 << 20;

// ---- JSON-RPC framing ---------------------------------------------------------------------------

/// One JSON-RPC message from the server.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// The answer to our request `id`.
    Result {
        id: Value,
        result: Value,
    },
    /// The error answer to our request `id` (`id` is null when the server could not read it).
    Error {
        id: Value,
        code: i64,
        message: String,
    },
    /// The server asks us something; it must be answered.
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
}

/// Reads one JSON-RPC message (a batch, an array, is no longer part of the protocol: refused).
pub fn parse_message(text: &str) -> Result<Incoming, String> {
    let v: Value = serde_json::from_str(text.trim())
        .map_err(|_| format!("not JSON: \"{}\"", sanitize_snippet(text, 120)))?;
    let Value::Object(o) = v else {
        return Err("a JSON-RPC message must be an object".into());
    };
    let id = o.get("id").cloned();
    let method = o.get("method").and_then(Value::as_str).map(str::to_string);
    let params = o.get("params").cloned().unwrap_or(Value::Null);
    match (method, id) {
        (Some(method), Some(id)) if !id.is_null() => Ok(Incoming::Request { id, method, params }),
        (Some(method), _) => Ok(Incoming::Notification { method, params }),
        (None, id) => {
            let id = id.unwrap_or(Value::Null);
            if let Some(e) = o.get("error") {
                Ok(Incoming::Error {
                    id,
                    code: e.get("code").and_then(Value::as_i64).unwrap_or(0),
                    message: e
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                })
            } else if let Some(result) = o.get("result") {
                Ok(Incoming::Result {
                    id,
                    result: result.clone(),
                })
            } else {
                Err("a JSON-RPC message without method, result or error".into())
            }
        }
    }
}

/// A request's body.
pub fn request_body(id: u64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// A notification's body (no id: nothing answers it).
pub fn notification_body(method: &str, params: Option<Value>) -> String {
    match params {
        Some(p) => json!({"jsonrpc": "2.0", "method": method, "params": p}).to_string(),
        None => json!({"jsonrpc": "2.0", "method": method}).to_string(),
    }
}

/// Our answer to a server's request: `ping` gets an empty result; everything else (sampling,
/// roots, elicitation: capabilities this client does not declare) gets "method not found", so the
/// server is never left waiting.
pub fn answer_server_request(id: &Value, method: &str) -> String {
    if method == "ping" {
        json!({"jsonrpc": "2.0", "id": id, "result": {}}).to_string()
    } else {
        json!({"jsonrpc": "2.0", "id": id, "error": {
            "code": METHOD_NOT_FOUND,
            "message": format!("Method not found: {method} is not supported by this client"),
        }})
        .to_string()
    }
}

/// A JSON-RPC error code in words, with the server's message.
pub fn rpc_error_text(code: i64, message: &str) -> String {
    let what = match code {
        -32700 => "could not parse the request",
        -32600 => "found the request invalid",
        -32601 => "does not know this method",
        -32602 => "refused the arguments",
        -32603 => "had an internal error",
        -32002 => "does not know this resource",
        -32099..=-32000 => "reported a server error",
        _ => "reported an error",
    };
    let said = sanitize_snippet(message, 300);
    if said.is_empty() {
        format!("The MCP server {what} (JSON-RPC {code}).")
    } else {
        format!("The MCP server {what} (JSON-RPC {code}): {said}")
    }
}

// ---- URLs -------------------------------------------------------------------------------------

/// `scheme://host[:port]` of `url`, lowercase, the scheme's default port left out; `None` when it
/// is not an absolute http(s) URL.
pub fn origin_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.trim().split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit('@').next()?.to_ascii_lowercase();
    if authority.is_empty() {
        return None;
    }
    let default = if scheme == "http" { ":80" } else { ":443" };
    let authority = authority.strip_suffix(default).unwrap_or(&authority);
    Some(format!("{scheme}://{authority}"))
}

/// `reference` resolved against `base` (an absolute URL): absolute, scheme-relative (`//h/p`),
/// absolute-path (`/p?q`), query-only (`?q`, the base's path) or relative-path (`p?q`, beside the
/// base's last segment; `..` is left to the server).
pub fn resolve_url(base: &str, reference: &str) -> Option<String> {
    let reference = reference.trim();
    if reference.contains("://") {
        return origin_of(reference).map(|_| reference.to_string());
    }
    let origin = origin_of(base)?;
    if let Some(rest) = reference.strip_prefix("//") {
        let scheme = origin.split("://").next()?;
        return Some(format!("{scheme}://{rest}"));
    }
    if reference.starts_with('/') {
        return Some(format!("{origin}{reference}"));
    }
    let (_, rest) = base.trim().split_once("://")?;
    let path = match rest.find('/') {
        Some(i) => rest[i..].split(['?', '#']).next().unwrap_or("/"),
        None => "/",
    };
    if reference.starts_with('?') {
        return Some(format!("{origin}{path}{reference}"));
    }
    let dir = &path[..path.rfind('/').map_or(0, |i| i + 1)];
    let dir = if dir.is_empty() { "/" } else { dir };
    Some(format!("{origin}{dir}{reference}"))
}

/// Whether `host` is loopback, which browsers treat as secure (exempt from mixed content).
fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host.ends_with(".localhost")
        || host == "[::1]"
        || (host.split('.').next() == Some("127") && host.split('.').count() == 4)
}

/// The host of an origin (`http://h:1` → `h`; `[::1]` kept with brackets).
fn host_of(origin: &str) -> &str {
    let authority = origin.split_once("://").map_or(origin, |(_, a)| a);
    if authority.starts_with('[') {
        return authority
            .split(']')
            .next()
            .map_or(authority, |h| &authority[..h.len() + 1]);
    }
    authority.split(':').next().unwrap_or(authority)
}

// ---- failures a user can act on -----------------------------------------------------------------

fn failure(
    kind: FailureKind,
    message: String,
    fix: Option<String>,
    status: Option<u16>,
) -> Failure {
    Failure {
        kind,
        message,
        fix,
        status,
    }
}

/// An `http://` server from an `https://` page (not loopback): the browser blocks it before any
/// request. `None` when the page may call it.
pub fn mixed_content(server_url: &str, page_origin: &str) -> Option<Failure> {
    let server = origin_of(server_url)?;
    let page_secure = page_origin
        .trim()
        .to_ascii_lowercase()
        .starts_with("https://");
    if !page_secure || !server.starts_with("http://") || is_loopback(host_of(&server)) {
        return None;
    }
    Some(failure(
        FailureKind::Network,
        format!("This page can't call the MCP server at {server}: it is plain http and the page is https."),
        Some(format!(
            "Browsers block an https page from calling http:// addresses (mixed content); only \
             localhost is exempt. Serve the MCP server over https (or a tunnel or reverse proxy \
             that adds it) and use the https:// address, or run it on this machine as \
             http://localhost. Address: {}",
            sanitize_snippet(server_url, 120)
        )),
        None,
    ))
}

/// fetch failed before any response (the browser's opaque TypeError): mixed content when that is
/// the cause; on another origin, most likely CORS, with the headers the server must send;
/// otherwise the server is not reachable.
pub fn network_failure(server_url: &str, page_origin: &str) -> Failure {
    if let Some(f) = mixed_content(server_url, page_origin) {
        return f;
    }
    let server = origin_of(server_url).unwrap_or_else(|| sanitize_snippet(server_url, 120));
    let page = origin_of(page_origin).unwrap_or_else(|| sanitize_snippet(page_origin, 120));
    let message = format!("Can't reach the MCP server at {server}.");
    if server == page {
        return failure(
            FailureKind::Network,
            message,
            Some("Check that the server is running and that its address is right.".into()),
            None,
        );
    }
    failure(
        FailureKind::Network,
        message,
        Some(format!(
            "Check that it is running. If it is, it does not allow this page to call it (CORS). \
             The server (or a proxy in front of it) must answer every request, the OPTIONS \
             preflight included, with Access-Control-Allow-Origin: {page}, \
             Access-Control-Allow-Headers: {CORS_ALLOW_HEADERS}, Access-Control-Expose-Headers: \
             mcp-session-id, and Access-Control-Allow-Methods: GET, POST, DELETE, OPTIONS."
        )),
        None,
    )
}

/// An error status from the server (`body`: what it said, quoted safely).
pub fn http_failure(status: u16, body: &str, has_token: bool) -> Failure {
    // A JSON-RPC error body (`{"error": {"message": …}}`) is quoted by its message.
    let message = serde_json::from_str::<Value>(body).ok().and_then(|v| {
        v.pointer("/error/message")
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    let said = sanitize_snippet(message.as_deref().unwrap_or(body), 300);
    let said = if said.is_empty() {
        String::new()
    } else {
        format!(" The server said: \"{said}\"")
    };
    let (kind, message, fix) = match status {
        401 | 403 if has_token => (
            FailureKind::Auth,
            format!("The MCP server refused the token (HTTP {status})."),
            "Check the bearer token in Settings → Tools: it may be wrong, expired, or lack access \
             to this server.",
        ),
        401 | 403 => (
            FailureKind::Auth,
            format!("The MCP server asks for a token (HTTP {status})."),
            "Add its bearer token in Settings → Tools (the server's documentation says how to get \
             one).",
        ),
        404 => (
            FailureKind::NotFound,
            "No MCP server at this address (HTTP 404).".into(),
            "Check the URL: it is the server's MCP endpoint, often ending in /mcp (or /sse for \
             older servers).",
        ),
        500..=599 => (
            FailureKind::Server,
            format!("The MCP server failed (HTTP {status})."),
            "The server had a problem; try again, or look at its log.",
        ),
        _ => (
            FailureKind::BadRequest,
            format!("The MCP server refused the request (HTTP {status})."),
            "Check the URL in Settings → Tools.",
        ),
    };
    failure(kind, message, Some(format!("{fix}{said}")), Some(status))
}

/// The server wants its session id back but the page never saw one: on another origin, the
/// browser hides every response header the server does not expose. `None` on the same origin
/// (nothing is hidden there).
pub fn session_header_hidden(server_url: &str, page_origin: &str) -> Option<Failure> {
    let server = origin_of(server_url)?;
    if origin_of(page_origin).as_deref() == Some(server.as_str()) {
        return None;
    }
    Some(failure(
        FailureKind::BadRequest,
        format!("The MCP server at {server} hides its session id from this page."),
        Some(
            concat!(
                "The server gave a session (Mcp-Session-Id) that the browser does not let the ",
                "page read. It (or a proxy in front of it) must send ",
                "Access-Control-Expose-Headers: mcp-session-id."
            )
            .into(),
        ),
        Some(400),
    ))
}

/// A body that is neither JSON nor an event stream (or not the JSON-RPC it should be).
pub fn unexpected_body(content_type: &str, body: &str) -> Failure {
    let ct = if content_type.trim().is_empty() {
        "no content type".to_string()
    } else {
        sanitize_snippet(content_type, 80)
    };
    let sample = sanitize_snippet(body, 200);
    let came = if sample.is_empty() {
        format!("an empty body ({ct})")
    } else {
        format!("{ct}: \"{sample}\"")
    };
    failure(
        FailureKind::Malformed,
        "The address did not answer as an MCP server.".into(),
        Some(format!(
            "An MCP server answers with application/json or text/event-stream; this one sent \
             {came}. Check that the URL is the server's MCP endpoint (often ending in /mcp)."
        )),
        None,
    )
}

/// The server offered a protocol revision this client does not speak.
pub fn unsupported_version(offered: &str) -> Failure {
    failure(
        FailureKind::BadRequest,
        format!(
            "The MCP server speaks protocol {}, which Memoire does not.",
            sanitize_snippet(offered, 40)
        ),
        Some(format!(
            "Memoire speaks {}. Update the server, or use one that supports one of these.",
            SUPPORTED_PROTOCOL_VERSIONS.join(", ")
        )),
        None,
    )
}

fn timed_out(what: &str, ms: u64) -> Failure {
    failure(
        FailureKind::Timeout,
        format!(
            "The MCP server did not answer {what} within {} s; it was cancelled.",
            ms / 1000
        ),
        Some("The server may be busy or stuck. Try again, or raise the timeout.".into()),
        None,
    )
}

/// The session ended while an answer stream was being resumed: the call may have run, so it is
/// not sent again.
fn session_lost_mid_call() -> Failure {
    failure(
        FailureKind::SessionGone,
        "The MCP server ended the session before the answer came; the call may or may not have run."
            .into(),
        Some("Check the tool's effect before trying again.".into()),
        Some(404),
    )
}

fn stopped() -> Failure {
    failure(FailureKind::Aborted, "Stopped.".into(), None, None)
}

fn rpc_failure(code: i64, message: &str) -> Failure {
    failure(
        FailureKind::Stream,
        rpc_error_text(code, message),
        None,
        None,
    )
}

fn endpoint_refused(endpoint: &str, server: &str) -> Failure {
    failure(
        FailureKind::BadRequest,
        "The MCP server pointed its messages to another origin; Memoire refused.".into(),
        Some(format!(
            "The server's endpoint event named {}, not on {}: requests (and the token) stay on the \
             address you entered. Check the server's configuration.",
            sanitize_snippet(endpoint, 120),
            sanitize_snippet(server, 120)
        )),
        None,
    )
}

// ---- tools and results --------------------------------------------------------------------------

/// A listed tool as `engine::tools` knows it: the MCP tool's name, its title (or else its
/// description's) and description, its `inputSchema` as the parameters. A schema that is not a
/// JSON object is refused (the reason says which tool): that tool is skipped, the others kept.
pub fn tool_def(server_id: &str, tool: &Value) -> Result<ToolDef, String> {
    let name = tool
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| "a tool without a name was skipped".to_string())?;
    let shown = sanitize_snippet(name, 64);
    let schema = match tool.get("inputSchema") {
        Some(s @ Value::Object(_)) => s,
        Some(_) => {
            return Err(format!(
                "tool {shown} was skipped: its inputSchema is not a JSON object"
            ))
        }
        None => return Err(format!("tool {shown} was skipped: it has no inputSchema")),
    };
    if schema.get("type").is_some_and(|t| t != "object") {
        return Err(format!(
            "tool {shown} was skipped: its inputSchema is not of type \"object\""
        ));
    }
    let text = |k: &str| tool.get(k).and_then(Value::as_str).unwrap_or("").trim();
    let description = match (text("title"), text("description")) {
        ("", d) => d.to_string(),
        (t, "") => t.to_string(),
        (t, d) if d == t => d.to_string(),
        (t, d) => format!("{t}: {d}"),
    };
    Ok(ToolDef {
        name: name.to_string(),
        description,
        parameters: schema.to_string(),
        source: ToolSource::Mcp(server_id.to_string()),
    })
}

/// Every tool of a listing as a def, and the reasons of those skipped.
pub fn tool_defs(server_id: &str, tools: &[Value]) -> (Vec<ToolDef>, Vec<String>) {
    let mut defs = Vec::new();
    let mut skipped = Vec::new();
    for t in tools {
        match tool_def(server_id, t) {
            Ok(d) => defs.push(d),
            Err(e) => skipped.push(e),
        }
    }
    (defs, skipped)
}

/// A `tools/call` result as the model reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// The content blocks in one text: text as is, other kinds described, never inlined.
    pub text: String,
    /// The tool reported a failure (`isError`): a result the model sees, not a crash.
    pub is_error: bool,
    /// `structuredContent`, when the tool gave it.
    pub structured: Option<Value>,
}

impl ToolOutput {
    /// For `tools::ToolLoop::handle_tool_result`: the text, as a failure when `is_error`.
    pub fn for_loop(&self) -> Result<String, String> {
        if self.is_error {
            Err(self.text.clone())
        } else {
            Ok(self.text.clone())
        }
    }
}

/// Size of base64 data in bytes, roughly.
fn b64_bytes(data: &str) -> usize {
    data.trim_end_matches('=').len() * 3 / 4
}

fn described(kind: &str, block: &Value) -> String {
    let s = |k: &str| block.get(k).and_then(Value::as_str).unwrap_or("");
    let mime = |mime: &str| {
        if mime.is_empty() {
            "unknown type".to_string()
        } else {
            mime.to_string()
        }
    };
    match kind {
        "image" | "audio" => format!(
            "[{kind}: {}, {} bytes, not shown]",
            mime(s("mimeType")),
            b64_bytes(s("data"))
        ),
        "resource_link" => {
            let title = [s("title"), s("name")]
                .into_iter()
                .find(|t| !t.is_empty())
                .unwrap_or("");
            let mut out = format!("[resource link: {}", s("uri"));
            if !title.is_empty() {
                out.push_str(&format!(" ({title})"));
            }
            if !s("mimeType").is_empty() {
                out.push_str(&format!(", {}", s("mimeType")));
            }
            if !s("description").is_empty() {
                out.push_str(&format!(": {}", s("description")));
            }
            out.push(']');
            out
        }
        "resource" => {
            let r = block.get("resource").cloned().unwrap_or(Value::Null);
            let rs = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            match r.get("text").and_then(Value::as_str) {
                Some(text) => format!("[resource {}]\n{text}", rs("uri")),
                None => format!(
                    "[resource {}: {}, {} bytes, not shown]",
                    rs("uri"),
                    mime(&rs("mimeType")),
                    b64_bytes(&rs("blob"))
                ),
            }
        }
        other => format!("[{} content, not shown]", sanitize_snippet(other, 40)),
    }
}

/// A `tools/call` result's `content` blocks in one text (module doc); a result without blocks
/// shows its `structuredContent` as JSON.
pub fn render_result(result: &Value) -> ToolOutput {
    let blocks = result.get("content").and_then(Value::as_array);
    let parts: Vec<String> = blocks
        .into_iter()
        .flatten()
        .map(
            |b| match b.get("type").and_then(Value::as_str).unwrap_or("") {
                "text" => b
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                kind => described(kind, b),
            },
        )
        .collect();
    let structured = result
        .get("structuredContent")
        .filter(|v| !v.is_null())
        .cloned();
    let text = match (&structured, parts.is_empty()) {
        (Some(s), true) => s.to_string(),
        _ => parts.join("\n"),
    };
    ToolOutput {
        text,
        is_error: result
            .get("isError")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        structured,
    }
}

// ---- the machine --------------------------------------------------------------------------------

/// An HTTP method the client uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpMethod {
    Post,
    Get,
    Delete,
}

/// One HTTP request to execute; its `exchange` names it in the `handle_*` calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpHttp {
    pub exchange: u64,
    pub method: HttpMethod,
    pub url: String,
    /// In this order; names as sent.
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
}

/// What the session must do.
#[derive(Debug, Clone, PartialEq)]
pub enum McpAction {
    /// Execute this request; report its head, body and end (or its failure).
    Http(McpHttp),
    /// Abort the fetch of this exchange (its answer no longer matters).
    Abort { exchange: u64 },
    /// The handshake is done: the revision agreed and the server's name.
    Ready {
        protocol_version: String,
        server_name: String,
    },
    /// The server's tools, all pages (again after `list_changed`), and the ones skipped, why.
    Tools {
        defs: Vec<ToolDef>,
        skipped: Vec<String>,
    },
    /// A call ended: its output (even `isError`), or why there is none.
    CallDone {
        call_id: String,
        result: Result<ToolOutput, Failure>,
    },
    /// The server cannot be used (the handshake or listing failed); calls pending failed with it.
    Failed(Failure),
    /// The session was closed.
    Closed,
}

/// What the client is told once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpConfig {
    /// Settings → Tools' id of this server (the tools' `ToolSource::Mcp`).
    pub server_id: String,
    pub url: String,
    /// The page's origin (`https://app.example`), for CORS and mixed-content explanations.
    pub page_origin: String,
    pub token: Option<String>,
    /// Memoire's version, for `clientInfo`.
    pub client_version: String,
    /// How long a request may wait for its answer.
    pub timeout_ms: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Transport {
    Streamable,
    /// HTTP+SSE (2024-11-05): the GET stream is open; POSTs go to `post_url` once it is known.
    Legacy,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Idle,
    Initializing,
    Ready,
    Failed,
    Closed,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Purpose {
    Initialize,
    List,
    Call { call_id: String },
}

impl Purpose {
    /// What a timeout's line calls it.
    fn what(&self) -> &'static str {
        match self {
            Purpose::Initialize => "the connection",
            Purpose::List => "the tool list",
            Purpose::Call { .. } => "the tool call",
        }
    }
}

#[derive(Debug, Clone)]
struct Pending {
    purpose: Purpose,
    method: String,
    params: Value,
    deadline: Millis,
    exchange: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ExchangeKind {
    /// A POST of request `rpc id`, or the GET that resumes its answer stream (`Last-Event-ID`).
    Request(u64),
    /// A POST of a notification or an answer: 202 expected.
    Notify,
    /// The POST of `notifications/initialized`: once accepted, the standing GET stream opens.
    Initialized,
    /// The standing GET stream of Streamable HTTP (server notifications and requests; a 405 says
    /// the server has none).
    Listen,
    /// The legacy GET stream.
    LegacyStream,
    Delete,
}

#[derive(Debug)]
enum Body {
    Unknown,
    Json(Vec<u8>),
    Sse(SseParser),
    Ignored,
}

#[derive(Debug)]
struct Exchange {
    kind: ExchangeKind,
    had_session: bool,
    body: Body,
    status: u16,
    content_type: String,
    /// An event came on this stream (a priming one counts): a resumption made progress.
    saw_event: bool,
    /// A GET (a stream resumed, or a standing one), not a POST.
    get: bool,
}

/// The MCP client machine (module doc).
#[derive(Debug)]
pub struct McpClient {
    config: McpConfig,
    transport: Transport,
    phase: Phase,
    post_url: Option<String>,
    session_id: Option<String>,
    protocol_version: Option<String>,
    next_rpc: u64,
    next_exchange: u64,
    pending: BTreeMap<u64, Pending>,
    exchanges: BTreeMap<u64, Exchange>,
    /// Requests waiting for the handshake (a call made early, one that met a 404 session).
    queued: Vec<Pending>,
    listing: Vec<Value>,
    list_again: bool,
    reinit_used: bool,
    /// Answer streams closed before their answer, to resume with GET at `at`: (at, rpc, last id).
    /// `None` for the standing stream.
    resumes: Vec<(Millis, Option<u64>, String)>,
    actions: VecDeque<McpAction>,
}

impl McpClient {
    pub fn new(config: McpConfig) -> McpClient {
        McpClient {
            config,
            transport: Transport::Streamable,
            phase: Phase::Idle,
            post_url: None,
            session_id: None,
            protocol_version: None,
            next_rpc: 0,
            next_exchange: 0,
            pending: BTreeMap::new(),
            exchanges: BTreeMap::new(),
            queued: Vec::new(),
            listing: Vec::new(),
            list_again: false,
            reinit_used: false,
            resumes: Vec::new(),
            actions: VecDeque::new(),
        }
    }

    /// The next thing to do.
    pub fn poll_action(&mut self) -> Option<McpAction> {
        self.actions.pop_front()
    }

    /// When [`McpClient::handle_timeout`] is due: the earliest deadline of a request out.
    pub fn poll_timeout(&self) -> Option<Millis> {
        self.pending
            .values()
            .chain(&self.queued)
            .map(|p| p.deadline)
            .chain(self.resumes.iter().map(|r| r.0))
            .min()
    }

    /// The revision agreed, once the handshake is done.
    pub fn protocol_version(&self) -> Option<&str> {
        self.protocol_version.as_deref()
    }

    /// Whether the handshake is done and the server usable.
    pub fn is_ready(&self) -> bool {
        self.phase == Phase::Ready
    }

    /// Starts: `initialize` over Streamable HTTP (the page's mixed-content rule checked first).
    pub fn connect(&mut self, now: Millis) {
        if self.phase != Phase::Idle {
            return;
        }
        if let Some(f) = mixed_content(&self.config.url, &self.config.page_origin) {
            return self.fail(f);
        }
        self.post_url = Some(self.config.url.clone());
        self.start_initialize(now);
    }

    /// Calls tool `name` (its MCP name, `ToolDef::name`) with `arguments` (a JSON object as text;
    /// anything else goes as `{}`); `call_id` names it in [`McpAction::CallDone`].
    pub fn call_tool(&mut self, call_id: &str, name: &str, arguments: &str, now: Millis) {
        let args = match serde_json::from_str::<Value>(arguments) {
            Ok(v @ Value::Object(_)) => v,
            _ => Value::Object(Map::new()),
        };
        let p = Pending {
            purpose: Purpose::Call {
                call_id: call_id.to_string(),
            },
            method: "tools/call".into(),
            params: json!({"name": name, "arguments": args}),
            deadline: now + self.timeout(),
            exchange: None,
        };
        match self.phase {
            Phase::Ready => self.send(p),
            Phase::Idle | Phase::Initializing => self.queued.push(p),
            Phase::Failed | Phase::Closed => self.actions.push_back(McpAction::CallDone {
                call_id: call_id.to_string(),
                result: Err(failure(
                    FailureKind::Network,
                    "The MCP server is not connected.".into(),
                    None,
                    None,
                )),
            }),
        }
    }

    /// The user stopped call `call_id`: the server is told (`notifications/cancelled`), its
    /// fetch aborted, and the call ends stopped.
    pub fn cancel_call(&mut self, call_id: &str, _now: Millis) {
        self.cancel_where(call_id, "The user stopped this call.", stopped());
    }

    /// Ends the session: DELETE with its id, when there is one (405 is fine); streams aborted.
    pub fn close(&mut self, _now: Millis) {
        if self.phase == Phase::Closed {
            return;
        }
        // What is open now is aborted; the cancellations sent below are not.
        let open: Vec<u64> = self.exchanges.keys().copied().collect();
        let calls: Vec<String> = self
            .pending
            .values()
            .chain(&self.queued)
            .filter_map(|p| match &p.purpose {
                Purpose::Call { call_id } => Some(call_id.clone()),
                _ => None,
            })
            .collect();
        for c in calls {
            self.cancel_where(&c, "The client closed the session.", stopped());
        }
        for e in open
            .into_iter()
            .filter(|e| self.exchanges.remove(e).is_some())
        {
            self.actions.push_back(McpAction::Abort { exchange: e });
        }
        self.pending.clear();
        self.queued.clear();
        self.resumes.clear();
        if self.transport == Transport::Streamable && self.session_id.is_some() {
            let url = self.config.url.clone();
            self.http(ExchangeKind::Delete, HttpMethod::Delete, url, None);
        }
        self.phase = Phase::Closed;
        self.actions.push_back(McpAction::Closed);
    }

    /// The head of exchange `exchange`'s response: status, content type and `Mcp-Session-Id`.
    pub fn handle_head(
        &mut self,
        exchange: u64,
        status: u16,
        content_type: &str,
        session_id: Option<&str>,
        now: Millis,
    ) {
        let Some(ex) = self.exchanges.get_mut(&exchange) else {
            return;
        };
        ex.status = status;
        ex.content_type = content_type.to_ascii_lowercase();
        let kind = ex.kind;
        let had_session = ex.had_session && !ex.get;
        let resumed = ex.get;
        let ct = ex.content_type.clone();
        let is_sse = ct.starts_with("text/event-stream");
        let ok = (200..300).contains(&status);
        match kind {
            ExchangeKind::Initialized if ok && self.transport == Transport::Streamable => {
                self.end_exchange(exchange);
                let url = self.config.url.clone();
                self.http(ExchangeKind::Listen, HttpMethod::Get, url, None);
            }
            ExchangeKind::Notify
            | ExchangeKind::Initialized
            | ExchangeKind::Delete
            | ExchangeKind::Listen
                if !ok || !is_sse =>
            {
                self.end_exchange(exchange);
            }
            ExchangeKind::Notify
            | ExchangeKind::Initialized
            | ExchangeKind::Delete
            | ExchangeKind::Listen => self.set_body(exchange, Body::Sse(SseParser::default())),
            ExchangeKind::LegacyStream if ok && is_sse => {
                self.set_body(exchange, Body::Sse(SseParser::default()));
            }
            ExchangeKind::LegacyStream => self.set_body(exchange, Body::Json(Vec::new())),
            ExchangeKind::Request(rpc) if resumed && status == 404 => {
                self.end_exchange(exchange);
                self.request_failed(rpc, session_lost_mid_call());
            }
            ExchangeKind::Request(rpc) => {
                self.request_head(exchange, rpc, status, is_sse, had_session, session_id, now)
            }
        }
    }

    /// The head of a request's answer (module doc: 202, the fallback, an expired session, JSON or
    /// SSE).
    #[allow(clippy::too_many_arguments)]
    fn request_head(
        &mut self,
        exchange: u64,
        rpc: u64,
        status: u16,
        is_sse: bool,
        had_session: bool,
        session_id: Option<&str>,
        now: Millis,
    ) {
        let ok = (200..300).contains(&status);
        let initialize = self
            .pending
            .get(&rpc)
            .is_some_and(|p| p.purpose == Purpose::Initialize);
        if self.transport == Transport::Legacy && ok {
            // The answer comes on the GET stream.
            return self.end_exchange(exchange);
        }
        if ok && initialize {
            if let Some(s) = session_id.filter(|s| !s.is_empty()) {
                self.session_id = Some(s.to_string());
            }
        }
        if ok && status == 202 {
            return self.end_exchange(exchange);
        }
        if initialize
            && self.transport == Transport::Streamable
            && matches!(status, 400 | 404 | 405)
            && !had_session
        {
            self.end_exchange(exchange);
            return self.fall_back(now);
        }
        if status == 404 && had_session {
            self.end_exchange(exchange);
            return self.session_expired(rpc, now);
        }
        let body = if ok && is_sse {
            Body::Sse(SseParser::default())
        } else {
            Body::Json(Vec::new())
        };
        self.set_body(exchange, body);
    }

    /// A chunk of exchange `exchange`'s body, as it arrived.
    pub fn handle_body(&mut self, exchange: u64, bytes: &[u8], now: Millis) {
        let mut messages = Vec::new();
        let mut junk = false;
        let Some(ex) = self.exchanges.get_mut(&exchange) else {
            return;
        };
        match &mut ex.body {
            Body::Json(buf) => {
                if buf.len() + bytes.len() <= MAX_JSON_BODY {
                    buf.extend_from_slice(bytes);
                }
            }
            Body::Sse(parser) => {
                parser.feed(bytes, &mut |ev| {
                    if let Ok(ev) = ev {
                        messages.push((ev.event.to_string(), ev.data.to_string()));
                    }
                    true
                });
                junk = parser.junk().is_some();
            }
            Body::Unknown | Body::Ignored => {}
        }
        for (event, data) in messages {
            self.on_event(exchange, &event, &data, now);
        }
        if junk {
            self.body_is_junk(exchange);
        }
    }

    /// Exchange `exchange`'s body ended, or broke off after its head (the same: an answer stream
    /// that gave an event id is resumed, any other request without its answer fails).
    pub fn handle_end(&mut self, exchange: u64, now: Millis) {
        let Some(mut ex) = self.exchanges.remove(&exchange) else {
            return;
        };
        let mut messages = Vec::new();
        let body = std::mem::replace(&mut ex.body, Body::Ignored);
        match body {
            Body::Sse(mut parser) => {
                parser.finish(&mut |ev| {
                    if let Ok(ev) = ev {
                        messages.push((ev.event.to_string(), ev.data.to_string()));
                    }
                    true
                });
                let resume = parser
                    .last_id()
                    .map(|id| (id.to_string(), parser.retry_ms()));
                self.exchanges.insert(exchange, ex);
                for (event, data) in messages {
                    self.on_event(exchange, &event, &data, now);
                }
                let Some(ex) = self.exchanges.remove(&exchange) else {
                    return;
                };
                self.stream_ended(&ex, resume, now);
            }
            Body::Json(buf) => self.json_ended(ex, &buf, now),
            Body::Unknown | Body::Ignored => {}
        }
    }

    /// fetch of exchange `exchange` failed before any response (offline, refused, CORS: the
    /// browser's TypeError); a body that breaks off later is [`McpClient::handle_end`].
    pub fn handle_fetch_failed(&mut self, exchange: u64, _now: Millis) {
        let Some(ex) = self.exchanges.remove(&exchange) else {
            return;
        };
        let f = network_failure(&self.config.url, &self.config.page_origin);
        match ex.kind {
            ExchangeKind::Request(rpc) => self.request_failed(rpc, f),
            ExchangeKind::LegacyStream => self.fail(f),
            ExchangeKind::Notify
            | ExchangeKind::Initialized
            | ExchangeKind::Listen
            | ExchangeKind::Delete => {}
        }
    }

    /// Time passed: every request past its deadline is cancelled (the server told) and fails.
    pub fn handle_timeout(&mut self, now: Millis) {
        self.resume_due(now);
        let ms = self.config.timeout_ms;
        let due: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, p)| p.deadline <= now)
            .map(|(id, _)| *id)
            .collect();
        for rpc in due {
            let Some(p) = self.pending.get(&rpc) else {
                continue;
            };
            let what = p.purpose.what();
            let reason = format!("Timed out after {} s.", ms / 1000);
            self.cancel_rpc(rpc, &reason, timed_out(what, ms));
        }
        let late: Vec<Pending> = self
            .queued
            .iter()
            .filter(|p| p.deadline <= now)
            .cloned()
            .collect();
        self.queued.retain(|p| p.deadline > now);
        for p in late {
            let f = timed_out(p.purpose.what(), ms);
            self.settle(p.purpose, Err(f));
        }
    }

    // ---- internals ----

    /// Answer streams due to be resumed: GET with `Last-Event-ID`.
    fn resume_due(&mut self, now: Millis) {
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.resumes)
            .into_iter()
            .partition(|r| r.0 <= now);
        self.resumes = later;
        for (_, rpc, id) in due {
            let url = self.config.url.clone();
            let Some(rpc) = rpc else {
                if self.phase == Phase::Ready {
                    let kind = ExchangeKind::Listen;
                    self.http_after(kind, HttpMethod::Get, url, None, Some(&id));
                }
                continue;
            };
            if !self.pending.contains_key(&rpc) {
                continue;
            }
            let kind = ExchangeKind::Request(rpc);
            let e = self.http_after(kind, HttpMethod::Get, url, None, Some(&id));
            if let Some(p) = self.pending.get_mut(&rpc) {
                p.exchange = Some(e);
            }
        }
    }

    fn timeout(&self) -> Millis {
        self.config.timeout_ms as Millis
    }

    fn headers(&self, method: HttpMethod) -> Vec<(String, String)> {
        let mut h = Vec::new();
        let accept = if method == HttpMethod::Post {
            ACCEPT_POST
        } else {
            "text/event-stream"
        };
        if method != HttpMethod::Delete {
            h.push(("Accept".to_string(), accept.to_string()));
        }
        if method == HttpMethod::Post {
            h.push(("Content-Type".into(), "application/json".into()));
        }
        if let Some(t) = self.config.token.as_deref().filter(|t| !t.is_empty()) {
            h.push(("Authorization".into(), format!("Bearer {t}")));
        }
        if self.transport == Transport::Streamable {
            if let Some(s) = &self.session_id {
                h.push(("Mcp-Session-Id".into(), s.clone()));
            }
        }
        if let Some(v) = &self.protocol_version {
            h.push(("MCP-Protocol-Version".into(), v.clone()));
        }
        h
    }

    fn http(
        &mut self,
        kind: ExchangeKind,
        method: HttpMethod,
        url: String,
        body: Option<String>,
    ) -> u64 {
        self.http_after(kind, method, url, body, None)
    }

    /// [`McpClient::http`], resuming after event `last_id` when given.
    fn http_after(
        &mut self,
        kind: ExchangeKind,
        method: HttpMethod,
        url: String,
        body: Option<String>,
        last_id: Option<&str>,
    ) -> u64 {
        self.next_exchange += 1;
        let exchange = self.next_exchange;
        let mut headers = self.headers(method);
        if let Some(id) = last_id {
            headers.push(("Last-Event-ID".into(), id.to_string()));
        }
        self.exchanges.insert(
            exchange,
            Exchange {
                kind,
                had_session: self.transport == Transport::Streamable && self.session_id.is_some(),
                body: Body::Unknown,
                status: 0,
                content_type: String::new(),
                saw_event: false,
                get: method == HttpMethod::Get,
            },
        );
        self.actions.push_back(McpAction::Http(McpHttp {
            exchange,
            method,
            url,
            headers,
            body,
        }));
        exchange
    }

    fn set_body(&mut self, exchange: u64, body: Body) {
        if let Some(ex) = self.exchanges.get_mut(&exchange) {
            ex.body = body;
        }
    }

    fn end_exchange(&mut self, exchange: u64) {
        if let Some(ex) = self.exchanges.get_mut(&exchange) {
            ex.body = Body::Ignored;
        }
    }

    /// Sends a request (a fresh id every time it goes).
    fn send(&mut self, mut p: Pending) {
        let Some(url) = self.post_url.clone() else {
            return self.queued.push(p);
        };
        self.next_rpc += 1;
        let rpc = self.next_rpc;
        let body = request_body(rpc, &p.method, p.params.clone());
        let exchange = self.http(
            ExchangeKind::Request(rpc),
            HttpMethod::Post,
            url,
            Some(body),
        );
        p.exchange = Some(exchange);
        self.pending.insert(rpc, p);
    }

    fn notify(&mut self, body: String) {
        if let Some(url) = self.post_url.clone() {
            self.http(ExchangeKind::Notify, HttpMethod::Post, url, Some(body));
        }
    }

    fn start_initialize(&mut self, now: Millis) {
        self.phase = Phase::Initializing;
        self.protocol_version = None;
        let params = json!({
            "protocolVersion": LATEST_PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "Memoire", "version": self.config.client_version},
        });
        self.send(Pending {
            purpose: Purpose::Initialize,
            method: "initialize".into(),
            params,
            deadline: now + self.timeout(),
            exchange: None,
        });
    }

    fn start_list(&mut self, cursor: Option<String>, now: Millis) {
        let params = match cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        self.send(Pending {
            purpose: Purpose::List,
            method: "tools/list".into(),
            params,
            deadline: now + self.timeout(),
            exchange: None,
        });
    }

    /// The initialize POST met 400/404/405: the server may be HTTP+SSE (2024-11-05).
    fn fall_back(&mut self, now: Millis) {
        let init: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, p)| p.purpose == Purpose::Initialize)
            .map(|(id, _)| *id)
            .collect();
        let mut deadline = now + self.timeout();
        for id in init {
            if let Some(p) = self.pending.remove(&id) {
                deadline = p.deadline;
            }
        }
        self.transport = Transport::Legacy;
        self.post_url = None;
        self.session_id = None;
        // The initialize waits for the endpoint event.
        self.queued.insert(
            0,
            Pending {
                purpose: Purpose::Initialize,
                method: "initialize".into(),
                params: json!({
                    "protocolVersion": LATEST_PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "Memoire", "version": self.config.client_version},
                }),
                deadline,
                exchange: None,
            },
        );
        let url = self.config.url.clone();
        self.http(ExchangeKind::LegacyStream, HttpMethod::Get, url, None);
    }

    /// A 404 to request `rpc`, which carried the session id: the session is gone. Initialize
    /// again once, then send the request again; a second time is a failure.
    fn session_expired(&mut self, rpc: u64, now: Millis) {
        let Some(p) = self.pending.remove(&rpc) else {
            return;
        };
        if self.reinit_used || p.purpose == Purpose::Initialize {
            let f = failure(
                FailureKind::SessionGone,
                "The MCP server ended the session again right after a new one began.".into(),
                Some(
                    "The server may be restarting or may not keep sessions; try again later."
                        .into(),
                ),
                Some(404),
            );
            self.settle(p.purpose, Err(f.clone()));
            return self.fail(f);
        }
        self.reinit_used = true;
        self.session_id = None;
        // The standing stream belongs to the old session; the new one opens its own.
        let listens: Vec<u64> = self
            .exchanges
            .iter()
            .filter(|(_, e)| e.kind == ExchangeKind::Listen)
            .map(|(id, _)| *id)
            .collect();
        for e in listens {
            self.exchanges.remove(&e);
            self.actions.push_back(McpAction::Abort { exchange: e });
        }
        if p.purpose != Purpose::List {
            self.queued.push(p);
        }
        if self.phase != Phase::Initializing {
            // Requests still out belong to the old session: they go again too.
            let others: Vec<u64> = self.pending.keys().copied().collect();
            for id in others {
                if let Some(o) = self.pending.remove(&id) {
                    if let Some(e) = o.exchange {
                        self.exchanges.remove(&e);
                        self.actions.push_back(McpAction::Abort { exchange: e });
                    }
                    if matches!(o.purpose, Purpose::Call { .. }) {
                        self.queued.push(o);
                    }
                }
            }
            self.start_initialize(now);
        }
    }

    fn on_event(&mut self, exchange: u64, event: &str, data: &str, now: Millis) {
        let kind = self.exchanges.get_mut(&exchange).map(|e| {
            e.saw_event = true;
            e.kind
        });
        if kind == Some(ExchangeKind::LegacyStream) && event == "endpoint" {
            return self.on_endpoint(data, now);
        }
        if event != "message" || data.trim().is_empty() {
            return;
        }
        if let Ok(m) = parse_message(data) {
            self.on_message(m, now);
        }
    }

    fn on_endpoint(&mut self, data: &str, now: Millis) {
        if self.post_url.is_some() {
            return;
        }
        let server = origin_of(&self.config.url);
        match resolve_url(&self.config.url, data) {
            Some(u) if origin_of(&u) == server && server.is_some() => {
                self.post_url = Some(u);
                self.flush_queued(now);
            }
            _ => {
                let f = endpoint_refused(data, &self.config.url);
                self.fail(f);
            }
        }
    }

    fn flush_queued(&mut self, _now: Millis) {
        let queued = std::mem::take(&mut self.queued);
        let (init, rest): (Vec<Pending>, Vec<Pending>) = queued
            .into_iter()
            .partition(|p| p.purpose == Purpose::Initialize);
        self.queued = rest;
        for p in init {
            self.send(p);
        }
    }

    fn on_message(&mut self, m: Incoming, now: Millis) {
        match m {
            Incoming::Request { id, method, .. } => {
                let body = answer_server_request(&id, &method);
                self.notify(body);
            }
            Incoming::Notification { method, .. } => {
                if method == "notifications/tools/list_changed" && self.phase == Phase::Ready {
                    self.relist(now);
                }
            }
            Incoming::Result { id, result } => {
                let Some(rpc) = id.as_u64() else { return };
                let Some(p) = self.pending.remove(&rpc) else {
                    return;
                };
                self.end_resumed(p.exchange);
                self.on_result(p, result, now);
            }
            Incoming::Error { id, code, message } => {
                let Some(rpc) = id.as_u64() else { return };
                let Some(p) = self.pending.remove(&rpc) else {
                    return;
                };
                self.end_resumed(p.exchange);
                self.settle(p.purpose, Err(rpc_failure(code, &message)));
            }
        }
    }

    /// A resumed answer stream (a GET) whose answer came: the server may keep it open, so it is
    /// aborted. (A POST's stream ends by itself after its answer.)
    fn end_resumed(&mut self, exchange: Option<u64>) {
        let Some(e) = exchange.filter(|e| self.exchanges.get(e).is_some_and(|x| x.get)) else {
            return;
        };
        self.exchanges.remove(&e);
        self.actions.push_back(McpAction::Abort { exchange: e });
    }

    /// A new listing replaces one under way.
    fn relist(&mut self, now: Millis) {
        let lists: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, p)| p.purpose == Purpose::List)
            .map(|(id, _)| *id)
            .collect();
        for id in lists {
            if let Some(e) = self.pending.remove(&id).and_then(|p| p.exchange) {
                self.exchanges.remove(&e);
                self.actions.push_back(McpAction::Abort { exchange: e });
            }
        }
        self.listing.clear();
        self.list_again = false;
        self.start_list(None, now);
    }

    fn on_result(&mut self, p: Pending, result: Value, now: Millis) {
        if p.purpose != Purpose::Initialize {
            // The session works again: a later expiry may initialize once more.
            self.reinit_used = false;
        }
        match p.purpose {
            Purpose::Initialize => self.initialized(result, now),
            Purpose::List => {
                let tools = result
                    .get("tools")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                self.listing.extend(tools);
                match result.get("nextCursor").and_then(Value::as_str) {
                    Some(c) if !c.is_empty() => self.start_list(Some(c.to_string()), now),
                    _ => {
                        let (defs, skipped) = tool_defs(&self.config.server_id, &self.listing);
                        self.listing.clear();
                        self.actions.push_back(McpAction::Tools { defs, skipped });
                    }
                }
            }
            Purpose::Call { call_id } => self.actions.push_back(McpAction::CallDone {
                call_id,
                result: Ok(render_result(&result)),
            }),
        }
    }

    fn initialized(&mut self, result: Value, now: Millis) {
        let offered = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !SUPPORTED_PROTOCOL_VERSIONS.contains(&offered) {
            return self.fail(unsupported_version(offered));
        }
        self.protocol_version = Some(offered.to_string());
        self.phase = Phase::Ready;
        self.listing.clear();
        self.queued.retain(|p| p.purpose != Purpose::List);
        if let Some(url) = self.post_url.clone() {
            let body = notification_body("notifications/initialized", None);
            self.http(ExchangeKind::Initialized, HttpMethod::Post, url, Some(body));
        }
        let server_name = result
            .pointer("/serverInfo/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        self.actions.push_back(McpAction::Ready {
            protocol_version: offered.to_string(),
            server_name,
        });
        self.start_list(None, now);
        let queued = std::mem::take(&mut self.queued);
        for p in queued {
            self.send(p);
        }
    }

    /// A request's POST failed (no answer will come).
    fn request_failed(&mut self, rpc: u64, f: Failure) {
        let Some(p) = self.pending.remove(&rpc) else {
            return;
        };
        self.settle(p.purpose, Err(f));
    }

    /// A request ends without a result: a call fails alone; the handshake or listing fails all.
    fn settle(&mut self, purpose: Purpose, result: Result<ToolOutput, Failure>) {
        match (purpose, result) {
            (Purpose::Call { call_id }, result) => self
                .actions
                .push_back(McpAction::CallDone { call_id, result }),
            (_, Err(f)) => self.fail(f),
            (_, Ok(_)) => {}
        }
    }

    fn cancel_where(&mut self, call_id: &str, reason: &str, f: Failure) {
        let is_it =
            |p: &Pending| matches!(&p.purpose, Purpose::Call { call_id: c } if c == call_id);
        if let Some(i) = self.queued.iter().position(is_it) {
            let p = self.queued.remove(i);
            return self.settle(p.purpose, Err(f));
        }
        let rpc = self
            .pending
            .iter()
            .find(|(_, p)| is_it(p))
            .map(|(id, _)| *id);
        if let Some(rpc) = rpc {
            self.cancel_rpc(rpc, reason, f);
        }
    }

    /// Request `rpc` will not be waited for: `notifications/cancelled`, its fetch aborted (a
    /// Streamable HTTP answer stream), and it settles with `f`. An `initialize` is never
    /// cancelled by notification (the spec forbids it).
    fn cancel_rpc(&mut self, rpc: u64, reason: &str, f: Failure) {
        let Some(p) = self.pending.remove(&rpc) else {
            return;
        };
        if p.purpose != Purpose::Initialize {
            self.notify(notification_body(
                "notifications/cancelled",
                Some(json!({"requestId": rpc, "reason": reason})),
            ));
        }
        if let Some(e) = p.exchange.filter(|e| self.exchanges.contains_key(e)) {
            self.exchanges.remove(&e);
            self.actions.push_back(McpAction::Abort { exchange: e });
        }
        self.settle(p.purpose, Err(f));
    }

    fn body_is_junk(&mut self, exchange: u64) {
        let Some(ex) = self.exchanges.remove(&exchange) else {
            return;
        };
        let sample = match &ex.body {
            Body::Sse(p) => p.junk().unwrap_or("").to_string(),
            _ => String::new(),
        };
        self.actions.push_back(McpAction::Abort { exchange });
        let f = unexpected_body(&ex.content_type, &sample);
        match ex.kind {
            ExchangeKind::Request(rpc) => self.request_failed(rpc, f),
            ExchangeKind::LegacyStream => self.fail(f),
            _ => {}
        }
    }

    /// An SSE body ended: a request whose answer did not come on it is resumed with GET after
    /// the stream's `retry` (when the stream gave an event id and made progress), else fails; the
    /// legacy stream's end ends the connection.
    fn stream_ended(&mut self, ex: &Exchange, resume: Option<(String, Option<u64>)>, now: Millis) {
        match ex.kind {
            // The standing stream closed after an event with an id: reconnect after its retry.
            ExchangeKind::Listen if ex.saw_event && self.phase == Phase::Ready => {
                if let Some((id, retry)) = resume {
                    let at = now + retry.unwrap_or(DEFAULT_RETRY_MS) as Millis;
                    self.resumes.push((at, None, id));
                }
            }
            ExchangeKind::Request(rpc) => {
                if let (Some((id, retry)), true) = (resume, ex.saw_event) {
                    if let Some(p) = self.pending.get_mut(&rpc) {
                        p.exchange = None;
                        let at = now + retry.unwrap_or(DEFAULT_RETRY_MS) as Millis;
                        self.resumes.push((at, Some(rpc), id));
                        return;
                    }
                }
                if self.pending.contains_key(&rpc) {
                    let f = failure(
                        FailureKind::Malformed,
                        "The MCP server's answer stream ended without the answer.".into(),
                        Some(
                            "The server may have restarted or dropped the connection; try again."
                                .into(),
                        ),
                        Some(ex.status),
                    );
                    self.request_failed(rpc, f);
                }
            }
            ExchangeKind::LegacyStream if self.phase != Phase::Closed => {
                let f = failure(
                    FailureKind::Network,
                    "The MCP server closed its event stream.".into(),
                    Some("The server may have restarted; connect again.".into()),
                    Some(ex.status),
                );
                self.fail(f);
            }
            _ => {}
        }
    }

    /// A JSON (or error) body ended.
    fn json_ended(&mut self, ex: Exchange, buf: &[u8], now: Millis) {
        let text = String::from_utf8_lossy(buf);
        let ok = (200..300).contains(&ex.status);
        let rpc = match ex.kind {
            ExchangeKind::Request(rpc) => Some(rpc),
            _ => None,
        };
        let has_token = self.config.token.as_deref().is_some_and(|t| !t.is_empty());
        if !ok {
            let hidden = ex.status == 400
                && self.transport == Transport::Streamable
                && self.session_id.is_none()
                && text.to_ascii_lowercase().contains("session");
            let f = match hidden {
                true => session_header_hidden(&self.config.url, &self.config.page_origin)
                    .unwrap_or_else(|| http_failure(ex.status, &text, has_token)),
                false => http_failure(ex.status, &text, has_token),
            };
            return match rpc {
                Some(rpc) => self.request_failed(rpc, f),
                None => self.fail(f),
            };
        }
        let Some(rpc) = rpc else {
            return self.fail(unexpected_body(&ex.content_type, &text));
        };
        if !ex.content_type.starts_with("application/json") {
            return self.request_failed(rpc, unexpected_body(&ex.content_type, &text));
        }
        match parse_message(&text) {
            // An error the server could not tie to the request (its id null) is still its answer.
            Ok(Incoming::Error {
                id: Value::Null,
                code,
                message,
            }) => self.request_failed(rpc, rpc_failure(code, &message)),
            Ok(m) => {
                self.on_message(m, now);
                // A JSON answer is the request's one message: no answer in it is a failure.
                if self.pending.contains_key(&rpc) {
                    self.request_failed(rpc, unexpected_body(&ex.content_type, &text));
                }
            }
            Err(_) => self.request_failed(rpc, unexpected_body(&ex.content_type, &text)),
        }
    }

    /// The server is unusable: every call waiting fails with `f`, then [`McpAction::Failed`].
    fn fail(&mut self, f: Failure) {
        if matches!(self.phase, Phase::Failed | Phase::Closed) {
            return;
        }
        self.phase = Phase::Failed;
        self.resumes.clear();
        let pending: Vec<Pending> = std::mem::take(&mut self.pending).into_values().collect();
        let queued = std::mem::take(&mut self.queued);
        for p in pending.into_iter().chain(queued) {
            if let Purpose::Call { call_id } = p.purpose {
                self.actions.push_back(McpAction::CallDone {
                    call_id,
                    result: Err(f.clone()),
                });
            }
        }
        let open: Vec<u64> = self.exchanges.keys().copied().collect();
        for e in open {
            self.actions.push_back(McpAction::Abort { exchange: e });
        }
        self.exchanges.clear();
        self.actions.push_back(McpAction::Failed(f));
    }
}
