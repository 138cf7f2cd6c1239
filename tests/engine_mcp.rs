#![cfg(not(target_arch = "wasm32"))]
//! The MCP client (`engine/mcp.rs`), driven as the session will drive it: the handshake and its
//! headers byte for byte, JSON and SSE answers split at every byte, `tools/list` pages and
//! `list_changed`, a call with each content kind, `isError`, the server's own requests answered,
//! an expired session initialized again once, timeout and Stop cancelling a call, the HTTP+SSE
//! fallback (its `endpoint` event, the same-origin rule), DELETE on close, the failures' words,
//! and tools becoming `ToolDef`s.

use memoire::engine::failure::FailureKind;
use memoire::engine::mcp::*;
use memoire::engine::tools::ToolSource;
use serde_json::{json, Value};

// ---- helpers ----------------------------------------------------------------------------------

const URL: &str = "https://mcp.example/mcp";
const PAGE: &str = "https://app.example";
const T: u64 = 30_000;

fn config() -> McpConfig {
    McpConfig {
        server_id: "srv".into(),
        url: URL.into(),
        page_origin: PAGE.into(),
        token: None,
        client_version: "1.2.3".into(),
        timeout_ms: T,
    }
}

fn drain(c: &mut McpClient) -> Vec<McpAction> {
    std::iter::from_fn(|| c.poll_action()).collect()
}

fn requests(actions: &[McpAction]) -> Vec<McpHttp> {
    actions
        .iter()
        .filter_map(|a| match a {
            McpAction::Http(h) => Some(h.clone()),
            _ => None,
        })
        .collect()
}

fn only_request(c: &mut McpClient) -> McpHttp {
    let r = requests(&drain(c));
    assert_eq!(r.len(), 1, "{r:?}");
    r[0].clone()
}

fn body(h: &McpHttp) -> Value {
    serde_json::from_str(h.body.as_deref().unwrap()).unwrap()
}

fn header<'a>(h: &'a McpHttp, name: &str) -> Option<&'a str> {
    h.headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Answers exchange `ex` whole.
fn answer(c: &mut McpClient, ex: u64, status: u16, ct: &str, session: Option<&str>, b: &str) {
    c.handle_head(ex, status, ct, session, 0);
    c.handle_body(ex, b.as_bytes(), 0);
    c.handle_end(ex, 0);
}

fn json_answer(c: &mut McpClient, ex: u64, v: Value) {
    answer(c, ex, 200, "application/json", None, &v.to_string());
}

fn sse(messages: &[Value]) -> String {
    messages
        .iter()
        .map(|m| format!("event: message\ndata: {m}\n\n"))
        .collect()
}

fn init_result(version: &str) -> Value {
    json!({"protocolVersion": version, "capabilities": {"tools": {"listChanged": true}},
           "serverInfo": {"name": "everything", "version": "1"}})
}

fn tool(name: &str) -> Value {
    json!({"name": name, "description": format!("{name} it"), "inputSchema": {"type": "object"}})
}

fn tool_names(actions: &[McpAction]) -> Option<Vec<String>> {
    actions.iter().find_map(|a| match a {
        McpAction::Tools { defs, .. } => Some(defs.iter().map(|d| d.name.clone()).collect()),
        _ => None,
    })
}

/// A client through the handshake and the first listing (one tool, `echo`), session `s1`, and
/// the standing GET it opened.
fn ready_listening(cfg: McpConfig) -> (McpClient, McpHttp) {
    let mut c = McpClient::new(cfg);
    c.connect(0);
    let init = only_request(&mut c);
    answer(
        &mut c,
        init.exchange,
        200,
        "application/json",
        Some("s1"),
        &json!({"jsonrpc": "2.0", "id": 1, "result": init_result(LATEST_PROTOCOL_VERSION)})
            .to_string(),
    );
    let out = requests(&drain(&mut c));
    answer(&mut c, out[0].exchange, 202, "", None, "");
    let listen = only_request(&mut c);
    let id = body(&out[1])["id"].clone();
    json_answer(
        &mut c,
        out[1].exchange,
        json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [tool("echo")]}}),
    );
    assert_eq!(tool_names(&drain(&mut c)), Some(vec!["echo".to_string()]));
    (c, listen)
}

fn ready_with(cfg: McpConfig) -> McpClient {
    ready_listening(cfg).0
}

fn ready() -> McpClient {
    ready_with(config())
}

/// Calls `echo` and returns its request.
fn call(c: &mut McpClient, call_id: &str) -> McpHttp {
    c.call_tool(call_id, "echo", r#"{"message":"hi"}"#, 0);
    only_request(c)
}

/// A call's id and its output, or its failure's kind and text.
type Done = (String, Result<ToolOutput, (FailureKind, String)>);

fn call_done(actions: &[McpAction]) -> Option<Done> {
    actions.iter().find_map(|a| match a {
        McpAction::CallDone { call_id, result } => Some((
            call_id.clone(),
            result.clone().map_err(|f| (f.kind.clone(), f.text())),
        )),
        _ => None,
    })
}

// ---- the handshake, byte for byte ---------------------------------------------------------------

fn check_first_request(cfg: McpConfig, headers: &[(&str, &str)]) {
    let mut c = McpClient::new(cfg);
    c.connect(0);
    let h = only_request(&mut c);
    let want: Vec<(String, String)> = headers
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(h.method, HttpMethod::Post);
    assert_eq!(h.url, URL);
    assert_eq!(h.headers, want);
    assert_eq!(
        h.body.as_deref(),
        Some(
            r#"{"id":1,"jsonrpc":"2.0","method":"initialize","params":{"capabilities":{},"clientInfo":{"name":"Memoire","version":"1.2.3"},"protocolVersion":"2025-11-25"}}"#
        )
    );
}

#[test]
fn initialize_is_posted_with_its_headers_and_nothing_else() {
    let accept = ("Accept", "application/json, text/event-stream");
    let ct = ("Content-Type", "application/json");
    check_first_request(config(), &[accept, ct]);
    let tokened = McpConfig {
        token: Some("tok".into()),
        ..config()
    };
    check_first_request(tokened, &[accept, ct, ("Authorization", "Bearer tok")]);
}

#[test]
fn after_initialize_every_request_carries_the_session_and_the_version() {
    let mut c = McpClient::new(config());
    c.connect(0);
    let init = only_request(&mut c);
    let result = json!({"jsonrpc": "2.0", "id": 1, "result": init_result("2025-06-18")});
    answer(
        &mut c,
        init.exchange,
        200,
        "application/json",
        Some("s1"),
        &result.to_string(),
    );
    let actions = drain(&mut c);
    assert!(actions.contains(&McpAction::Ready {
        protocol_version: "2025-06-18".into(),
        server_name: "everything".into()
    }));
    let out = requests(&actions);
    assert_eq!(out.len(), 2);
    let session_headers = |h: &McpHttp| {
        (
            header(h, "Mcp-Session-Id").map(str::to_string),
            header(h, "MCP-Protocol-Version").map(str::to_string),
        )
    };
    assert_eq!(
        out[0].body.as_deref(),
        Some(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
    );
    assert_eq!(
        out[1].body.as_deref(),
        Some(r#"{"id":2,"jsonrpc":"2.0","method":"tools/list","params":{}}"#)
    );
    for h in &out {
        assert_eq!(
            session_headers(h),
            (Some("s1".into()), Some("2025-06-18".into()))
        );
    }
    assert_eq!(c.protocol_version(), Some("2025-06-18"));
}

fn check_counter_offer(version: &str, accepted: bool) {
    let mut c = McpClient::new(config());
    c.connect(0);
    let init = only_request(&mut c);
    json_answer(
        &mut c,
        init.exchange,
        json!({"jsonrpc": "2.0", "id": 1, "result": init_result(version)}),
    );
    let actions = drain(&mut c);
    let failed = actions
        .iter()
        .any(|a| matches!(a, McpAction::Failed(f) if f.message.contains("speaks protocol")));
    assert_eq!((c.is_ready(), failed), (accepted, !accepted), "{version}");
}

#[test]
fn a_counter_offer_is_taken_when_supported() {
    check_counter_offer("2025-11-25", true);
    check_counter_offer("2025-06-18", true);
    check_counter_offer("2025-03-26", true);
    check_counter_offer("2024-11-05", true);
    check_counter_offer("2099-01-01", false);
    check_counter_offer("", false);
}

// ---- JSON and SSE answers, split at every byte ------------------------------------------------

/// The actions after answering a call with `b` (content type `ct`), the body cut at `cuts`.
fn call_answered(ct: &str, b: &str, cuts: &[usize]) -> Vec<McpAction> {
    let mut c = ready();
    let h = call(&mut c, "c1");
    c.handle_head(h.exchange, 200, ct, None, 0);
    let bytes = b.as_bytes();
    let mut at = 0;
    for &cut in cuts.iter().chain(std::iter::once(&bytes.len())) {
        c.handle_body(h.exchange, &bytes[at..cut], 0);
        at = cut;
    }
    c.handle_end(h.exchange, 0);
    drain(&mut c)
}

fn check_every_split(ct: &str, b: &str) {
    let whole = call_answered(ct, b, &[]);
    assert!(
        call_done(&whole).is_some_and(|(_, r)| r.is_ok()),
        "{whole:?}"
    );
    for i in 0..=b.len() {
        assert_eq!(call_answered(ct, b, &[i]), whole, "cut at {i}");
    }
    let bytes: Vec<usize> = (1..b.len()).collect();
    assert_eq!(call_answered(ct, b, &bytes), whole, "byte by byte");
}

#[test]
fn json_and_sse_answers_give_the_same_whatever_the_cuts() {
    let result = json!({"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "héllo ✓"}]}});
    check_every_split("application/json", &result.to_string());
    check_every_split("application/json; charset=utf-8", &format!(" {result}\n"));
    check_every_split("text/event-stream", &sse(std::slice::from_ref(&result)));
    let progress =
        json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}});
    let ping = json!({"jsonrpc": "2.0", "id": "s-1", "method": "ping"});
    check_every_split("text/event-stream", &sse(&[progress, ping, result.clone()]));
    check_every_split(
        "text/event-stream",
        &format!(": keepalive\r\nid: 1\r\ndata: {result}\r\n\r\n"),
    );
}

#[test]
fn a_body_that_is_no_mcp_says_what_came() {
    let out = call_answered("text/html", "<html><body>Sign in</body></html>", &[]);
    let (_, r) = call_done(&out).unwrap();
    let (kind, text) = r.unwrap_err();
    assert_eq!(kind, FailureKind::Malformed);
    assert!(text.contains("text/html: \"Sign in\""), "{text}");
    let out = call_answered("text/event-stream", "<html>oops</html>\n", &[]);
    assert!(call_done(&out).unwrap().1.unwrap_err().1.contains("oops"));
    let out = call_answered("text/event-stream", "", &[]);
    assert!(call_done(&out)
        .unwrap()
        .1
        .unwrap_err()
        .1
        .contains("ended without the answer"));
}

// ---- tools/list: pages, list_changed, schemas -------------------------------------------------

#[test]
fn tools_are_listed_page_by_page() {
    let mut c = McpClient::new(config());
    c.connect(0);
    let init = only_request(&mut c);
    json_answer(
        &mut c,
        init.exchange,
        json!({"jsonrpc": "2.0", "id": 1, "result": init_result(LATEST_PROTOCOL_VERSION)}),
    );
    let list = requests(&drain(&mut c))[1].clone();
    json_answer(
        &mut c,
        list.exchange,
        json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": [tool("a")], "nextCursor": "p2"}}),
    );
    let page2 = only_request(&mut c);
    assert_eq!(body(&page2)["params"], json!({"cursor": "p2"}));
    json_answer(
        &mut c,
        page2.exchange,
        json!({"jsonrpc": "2.0", "id": 3, "result": {"tools": [tool("b"), tool("c")]}}),
    );
    assert_eq!(
        tool_names(&drain(&mut c)),
        Some(vec!["a".into(), "b".into(), "c".into()])
    );
}

#[test]
fn list_changed_lists_again() {
    let mut c = ready();
    let h = call(&mut c, "c1");
    let changed = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
    let result = json!({"jsonrpc": "2.0", "id": 3, "result": {"content": []}});
    answer(
        &mut c,
        h.exchange,
        200,
        "text/event-stream",
        None,
        &sse(&[changed, result]),
    );
    let out = drain(&mut c);
    let relist = requests(&out);
    assert_eq!(relist.len(), 1);
    assert_eq!(body(&relist[0])["method"], "tools/list");
    json_answer(
        &mut c,
        relist[0].exchange,
        json!({"jsonrpc": "2.0", "id": 4, "result": {"tools": [tool("echo"), tool("add")]}}),
    );
    assert_eq!(
        tool_names(&drain(&mut c)),
        Some(vec!["echo".into(), "add".into()])
    );
}

fn check_def(t: Value, want: Result<(&str, &str), &str>) {
    let got = tool_def("srv", &t).map(|d| {
        assert_eq!(d.source, ToolSource::Mcp("srv".into()));
        (d.name, d.description)
    });
    match want {
        Ok((n, d)) => assert_eq!(got, Ok((n.to_string(), d.to_string())), "{t}"),
        Err(e) => assert!(got.as_ref().is_err_and(|g| g.contains(e)), "{t}: {got:?}"),
    }
}

#[test]
fn a_tool_becomes_a_def_unless_its_schema_is_no_object() {
    let schema = json!({"type": "object", "properties": {"a": {"type": "number"}}});
    check_def(
        json!({"name": "add", "description": "Adds", "inputSchema": schema}),
        Ok(("add", "Adds")),
    );
    check_def(
        json!({"name": "add", "title": "Add", "description": "Adds", "inputSchema": {}}),
        Ok(("add", "Add: Adds")),
    );
    check_def(
        json!({"name": "add", "title": "Add", "inputSchema": {}}),
        Ok(("add", "Add")),
    );
    check_def(
        json!({"name": "bad", "inputSchema": "string"}),
        Err("bad was skipped: its inputSchema is not a JSON object"),
    );
    check_def(
        json!({"name": "bad", "inputSchema": {"type": "array"}}),
        Err("not of type \"object\""),
    );
    check_def(json!({"name": "bad"}), Err("no inputSchema"));
    check_def(json!({"inputSchema": {}}), Err("without a name"));
    let d = tool_def("srv", &json!({"name": "add", "inputSchema": schema})).unwrap();
    assert_eq!(d.parameters, schema.to_string());
    let (defs, skipped) = tool_defs(
        "srv",
        &[tool("a"), json!({"name": "b", "inputSchema": 1}), tool("c")],
    );
    assert_eq!(
        defs.iter().map(|d| d.name.as_str()).collect::<Vec<_>>(),
        ["a", "c"]
    );
    assert_eq!(skipped.len(), 1);
}

// ---- tools/call: content kinds, isError, structuredContent ------------------------------------

#[test]
fn a_call_is_posted_with_its_name_and_arguments() {
    let mut c = ready();
    let h = call(&mut c, "c1");
    assert_eq!(
        h.body.as_deref(),
        Some(
            r#"{"id":3,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"message":"hi"},"name":"echo"}}"#
        )
    );
    assert_eq!(header(&h, "Mcp-Session-Id"), Some("s1"));
    c.call_tool("c2", "echo", "not json", 0);
    assert_eq!(
        body(&only_request(&mut c))["params"]["arguments"],
        json!({})
    );
}

fn check_render(result: Value, text: &str, is_error: bool) {
    let out = render_result(&result);
    assert_eq!(
        (out.text.as_str(), out.is_error),
        (text, is_error),
        "{result}"
    );
}

#[test]
fn each_content_kind_is_text_or_described() {
    let one = |b: Value| json!({"content": [b]});
    check_render(one(json!({"type": "text", "text": "hi"})), "hi", false);
    check_render(
        one(json!({"type": "image", "data": "AAAA", "mimeType": "image/png"})),
        "[image: image/png, 3 bytes, not shown]",
        false,
    );
    check_render(
        one(json!({"type": "audio", "data": "AAAAAA==", "mimeType": "audio/wav"})),
        "[audio: audio/wav, 4 bytes, not shown]",
        false,
    );
    check_render(
        one(
            json!({"type": "resource_link", "uri": "file:///a.txt", "name": "a.txt", "mimeType": "text/plain"}),
        ),
        "[resource link: file:///a.txt (a.txt), text/plain]",
        false,
    );
    check_render(
        one(
            json!({"type": "resource", "resource": {"uri": "test://1", "mimeType": "text/plain", "text": "body"}}),
        ),
        "[resource test://1]\nbody",
        false,
    );
    check_render(
        one(
            json!({"type": "resource", "resource": {"uri": "test://2", "mimeType": "application/pdf", "blob": "AAAA"}}),
        ),
        "[resource test://2: application/pdf, 3 bytes, not shown]",
        false,
    );
    check_render(
        one(json!({"type": "hologram"})),
        "[hologram content, not shown]",
        false,
    );
    check_render(
        json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}),
        "a\nb",
        false,
    );
    check_render(
        json!({"content": [{"type": "text", "text": "no such city"}], "isError": true}),
        "no such city",
        true,
    );
    check_render(
        json!({"content": [], "structuredContent": {"t": 21}}),
        r#"{"t":21}"#,
        false,
    );
    let out = render_result(
        &json!({"content": [{"type": "text", "text": "21"}], "structuredContent": {"t": 21}}),
    );
    assert_eq!(
        (out.text.as_str(), out.structured),
        ("21", Some(json!({"t": 21})))
    );
}

#[test]
fn is_error_is_a_result_the_model_sees() {
    let result = json!({"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "boom"}], "isError": true}});
    let (id, r) = call_done(&call_answered("application/json", &result.to_string(), &[])).unwrap();
    let out = r.unwrap();
    assert_eq!(
        (id.as_str(), out.for_loop()),
        ("c1", Err("boom".to_string()))
    );
}

#[test]
fn a_json_rpc_error_fails_the_call_alone() {
    let err = json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": "Unknown tool: nope"}});
    let mut c = ready();
    let h = call(&mut c, "c1");
    json_answer(&mut c, h.exchange, err);
    let (_, r) = call_done(&drain(&mut c)).unwrap();
    assert_eq!(
        r.unwrap_err().1,
        "The MCP server refused the arguments (JSON-RPC -32602): Unknown tool: nope"
    );
    assert!(c.is_ready());
}

// ---- JSON-RPC framing -------------------------------------------------------------------------

#[test]
fn messages_are_read_by_their_shape() {
    let p = |s: &str| parse_message(s);
    assert_eq!(
        p(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
        Ok(Incoming::Result {
            id: json!(1),
            result: json!({})
        })
    );
    assert_eq!(
        p(r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"x"}}"#),
        Ok(Incoming::Error {
            id: json!(2),
            code: -32601,
            message: "x".into()
        })
    );
    assert_eq!(
        p(r#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#),
        Ok(Incoming::Request {
            id: json!("a"),
            method: "ping".into(),
            params: Value::Null
        })
    );
    assert_eq!(
        p(r#"{"jsonrpc":"2.0","method":"n","params":{"a":1}}"#),
        Ok(Incoming::Notification {
            method: "n".into(),
            params: json!({"a": 1})
        })
    );
    assert!(p(r#"[{"jsonrpc":"2.0","id":1,"result":{}}]"#).is_err());
    assert!(p("<html>").is_err());
    assert!(p(r#"{"jsonrpc":"2.0"}"#).is_err());
}

#[test]
fn error_codes_read_as_words() {
    assert_eq!(
        rpc_error_text(-32601, "Method not found"),
        "The MCP server does not know this method (JSON-RPC -32601): Method not found"
    );
    assert_eq!(
        rpc_error_text(-32603, ""),
        "The MCP server had an internal error (JSON-RPC -32603)."
    );
    assert_eq!(
        rpc_error_text(-32001, "<b>busy</b>"),
        "The MCP server reported a server error (JSON-RPC -32001): busy"
    );
    assert_eq!(
        rpc_error_text(42, "odd"),
        "The MCP server reported an error (JSON-RPC 42): odd"
    );
}

fn check_server_request(method: &str, answer_body: &str) {
    let mut c = ready();
    let h = call(&mut c, "c1");
    let req = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": {}});
    answer(
        &mut c,
        h.exchange,
        200,
        "text/event-stream",
        None,
        &sse(&[req]),
    );
    let out = requests(&drain(&mut c));
    assert_eq!(out.len(), 1, "{method}");
    assert_eq!(out[0].body.as_deref(), Some(answer_body), "{method}");
    assert_eq!(header(&out[0], "Mcp-Session-Id"), Some("s1"));
}

#[test]
fn the_servers_requests_are_answered() {
    check_server_request("ping", r#"{"id":7,"jsonrpc":"2.0","result":{}}"#);
    check_server_request(
        "sampling/createMessage",
        r#"{"error":{"code":-32601,"message":"Method not found: sampling/createMessage is not supported by this client"},"id":7,"jsonrpc":"2.0"}"#,
    );
    check_server_request(
        "roots/list",
        r#"{"error":{"code":-32601,"message":"Method not found: roots/list is not supported by this client"},"id":7,"jsonrpc":"2.0"}"#,
    );
    check_server_request(
        "elicitation/create",
        r#"{"error":{"code":-32601,"message":"Method not found: elicitation/create is not supported by this client"},"id":7,"jsonrpc":"2.0"}"#,
    );
}

#[test]
fn an_error_without_an_id_in_a_json_answer_is_that_requests() {
    let err =
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error"}});
    let (_, r) = call_done(&call_answered("application/json", &err.to_string(), &[])).unwrap();
    assert_eq!(
        r.unwrap_err().1,
        "The MCP server could not parse the request (JSON-RPC -32700): Parse error"
    );
}

#[test]
fn answers_to_unknown_ids_are_ignored() {
    let mut c = ready();
    let h = call(&mut c, "c1");
    let stray = json!({"jsonrpc": "2.0", "id": 99, "result": {"content": []}});
    let mine =
        json!({"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "ok"}]}});
    answer(
        &mut c,
        h.exchange,
        200,
        "text/event-stream",
        None,
        &sse(&[stray, mine]),
    );
    let out = drain(&mut c);
    assert_eq!(
        out.iter()
            .filter(|a| matches!(a, McpAction::CallDone { .. }))
            .count(),
        1
    );
    assert_eq!(call_done(&out).unwrap().1.unwrap().text, "ok");
}

// ---- session expiry, timeout, Stop ------------------------------------------------------------

#[test]
fn an_expired_session_is_initialized_again_once_and_the_call_retried() {
    let mut c = ready();
    let h = call(&mut c, "c1");
    answer(
        &mut c,
        h.exchange,
        404,
        "text/plain",
        None,
        "Session not found",
    );
    let out = drain(&mut c);
    assert_eq!(requests(&out).len(), 1);
    assert!(
        out.iter().any(|a| matches!(a, McpAction::Abort { .. })),
        "the old standing stream ends"
    );
    let init = requests(&out)[0].clone();
    assert_eq!(body(&init)["method"], "initialize");
    assert_eq!(
        (
            header(&init, "Mcp-Session-Id"),
            header(&init, "MCP-Protocol-Version")
        ),
        (None, None)
    );
    answer(
        &mut c,
        init.exchange,
        200,
        "application/json",
        Some("s2"),
        &json!({"jsonrpc": "2.0", "id": 4, "result": init_result(LATEST_PROTOCOL_VERSION)})
            .to_string(),
    );
    let out = requests(&drain(&mut c));
    let methods: Vec<Value> = out.iter().map(|h| body(h)["method"].clone()).collect();
    assert_eq!(
        methods,
        ["notifications/initialized", "tools/list", "tools/call"]
    );
    assert!(out
        .iter()
        .all(|h| header(h, "Mcp-Session-Id") == Some("s2")));
    // The retried call meets 404 again: no third initialize.
    answer(&mut c, out[2].exchange, 404, "", None, "");
    let out = drain(&mut c);
    assert!(requests(&out).is_empty());
    assert_eq!(
        call_done(&out).unwrap().1.unwrap_err().0,
        FailureKind::SessionGone
    );
}

fn check_cancelled(stop: bool) {
    let mut c = ready();
    let h = call(&mut c, "c1");
    assert_eq!(c.poll_timeout(), Some(T as i64));
    if stop {
        c.cancel_call("c1", 5);
    } else {
        c.handle_timeout(T as i64 - 1);
        assert!(drain(&mut c).is_empty());
        c.handle_timeout(T as i64);
    }
    let out = drain(&mut c);
    let reason = if stop {
        "The user stopped this call."
    } else {
        "Timed out after 30 s."
    };
    let cancel = requests(&out);
    assert_eq!(cancel.len(), 1);
    assert_eq!(
        body(&cancel[0]),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3, "reason": reason}})
    );
    assert!(out.contains(&McpAction::Abort {
        exchange: h.exchange
    }));
    let kind = call_done(&out).unwrap().1.unwrap_err().0;
    assert_eq!(
        kind,
        if stop {
            FailureKind::Aborted
        } else {
            FailureKind::Timeout
        }
    );
    // Its late answer changes nothing.
    json_answer(
        &mut c,
        h.exchange,
        json!({"jsonrpc": "2.0", "id": 3, "result": {"content": []}}),
    );
    assert!(drain(&mut c).is_empty());
    assert_eq!(c.poll_timeout(), None);
}

#[test]
fn a_call_past_its_time_is_cancelled_and_fails() {
    check_cancelled(false);
}

#[test]
fn stop_cancels_the_call() {
    check_cancelled(true);
}

#[test]
fn an_unanswered_initialize_times_out_without_a_cancel() {
    let mut c = McpClient::new(config());
    c.connect(0);
    let _ = drain(&mut c);
    c.handle_timeout(T as i64);
    let out = drain(&mut c);
    assert!(requests(&out).is_empty());
    assert!(out
        .iter()
        .any(|a| matches!(a, McpAction::Failed(f) if f.kind == FailureKind::Timeout)));
}

// ---- HTTP+SSE fallback ------------------------------------------------------------------------

/// Connects to a server that refuses the initialize POST with `status`, then answers the GET
/// stream with an `endpoint` event naming `endpoint`. The GET and what follows.
fn fallback(status: u16, endpoint: &str) -> (McpClient, McpHttp, Vec<McpAction>) {
    let mut c = McpClient::new(config());
    c.connect(0);
    let init = only_request(&mut c);
    answer(
        &mut c,
        init.exchange,
        status,
        "text/plain",
        None,
        "Method Not Allowed",
    );
    let get = only_request(&mut c);
    c.handle_head(get.exchange, 200, "text/event-stream", None, 0);
    c.handle_body(
        get.exchange,
        format!("event: endpoint\ndata: {endpoint}\n\n").as_bytes(),
        0,
    );
    let out = drain(&mut c);
    (c, get, out)
}

#[test]
fn a_refused_initialize_falls_back_to_http_and_sse() {
    for status in [400, 404, 405] {
        let (mut c, get, out) = fallback(status, "/messages?sessionId=abc");
        assert_eq!(
            (get.method, get.url.as_str(), get.body.as_deref()),
            (HttpMethod::Get, URL, None)
        );
        assert_eq!(
            get.headers,
            [("Accept".to_string(), "text/event-stream".to_string())]
        );
        let init = requests(&out);
        assert_eq!(init.len(), 1);
        assert_eq!(init[0].url, "https://mcp.example/messages?sessionId=abc");
        assert_eq!(body(&init[0])["method"], "initialize");
        answer(&mut c, init[0].exchange, 202, "", None, "Accepted");
        let result = json!({"jsonrpc": "2.0", "id": 2, "result": init_result("2024-11-05")});
        c.handle_body(get.exchange, sse(&[result]).as_bytes(), 0);
        let out = requests(&drain(&mut c));
        let methods: Vec<Value> = out.iter().map(|h| body(h)["method"].clone()).collect();
        assert_eq!(methods, ["notifications/initialized", "tools/list"]);
        assert!(out
            .iter()
            .all(|h| h.url.ends_with("/messages?sessionId=abc")
                && header(h, "Mcp-Session-Id").is_none()));
        answer(&mut c, out[1].exchange, 202, "", None, "");
        let list = json!({"jsonrpc": "2.0", "id": 3, "result": {"tools": [tool("echo")]}});
        c.handle_body(get.exchange, sse(&[list]).as_bytes(), 0);
        assert_eq!(tool_names(&drain(&mut c)), Some(vec!["echo".into()]));
    }
}

fn check_endpoint(endpoint: &str, post_url: Option<&str>) {
    let (_, _, out) = fallback(405, endpoint);
    let got = requests(&out).first().map(|h| h.url.clone());
    assert_eq!(got.as_deref(), post_url, "{endpoint}");
    let refused = out
        .iter()
        .any(|a| matches!(a, McpAction::Failed(f) if f.message.contains("another origin")));
    assert_eq!(refused, post_url.is_none(), "{endpoint}");
}

#[test]
fn the_endpoint_is_resolved_and_must_be_same_origin() {
    check_endpoint("/messages", Some("https://mcp.example/messages"));
    check_endpoint("messages?s=1", Some("https://mcp.example/messages?s=1"));
    check_endpoint(
        "https://mcp.example:443/m",
        Some("https://mcp.example:443/m"),
    );
    check_endpoint("//mcp.example/m", Some("https://mcp.example/m"));
    check_endpoint("?sessionId=1", Some("https://mcp.example/mcp?sessionId=1"));
    check_endpoint("https://evil.example/messages", None);
    check_endpoint("//evil.example/m", None);
    check_endpoint("http://mcp.example/m", None);
    check_endpoint("https://mcp.example.evil/m", None);
}

#[test]
fn urls_resolve_like_a_browser_for_endpoints() {
    assert_eq!(
        resolve_url("https://h/a/b", "c").as_deref(),
        Some("https://h/a/c")
    );
    assert_eq!(
        resolve_url("https://h/a/b?x=1", "/c").as_deref(),
        Some("https://h/c")
    );
    assert_eq!(
        resolve_url("https://h", "c").as_deref(),
        Some("https://h/c")
    );
    assert_eq!(
        origin_of("HTTPS://User@H.example:443/x").as_deref(),
        Some("https://h.example")
    );
    assert_eq!(origin_of("http://h:8080").as_deref(), Some("http://h:8080"));
    assert_eq!(origin_of("ftp://h"), None);
}

// ---- closing ----------------------------------------------------------------------------------

#[test]
fn close_deletes_the_session_and_405_is_fine() {
    let mut c = ready();
    c.close(0);
    let out = drain(&mut c);
    let del = requests(&out);
    assert_eq!(del.len(), 1);
    assert_eq!(
        (del[0].method, del[0].url.as_str(), del[0].body.as_deref()),
        (HttpMethod::Delete, URL, None)
    );
    assert_eq!(
        del[0].headers,
        [
            ("Mcp-Session-Id".to_string(), "s1".to_string()),
            (
                "MCP-Protocol-Version".to_string(),
                LATEST_PROTOCOL_VERSION.to_string()
            )
        ]
    );
    assert_eq!(out.last(), Some(&McpAction::Closed));
    answer(&mut c, del[0].exchange, 405, "", None, "");
    assert!(drain(&mut c).is_empty());
}

#[test]
fn close_stops_a_call_in_flight() {
    let mut c = ready();
    let h = call(&mut c, "c1");
    c.close(0);
    let out = drain(&mut c);
    assert!(out.contains(&McpAction::Abort {
        exchange: h.exchange
    }));
    assert_eq!(
        call_done(&out).unwrap().1.unwrap_err().0,
        FailureKind::Aborted
    );
    let sent = requests(&out);
    assert_eq!(body(&sent[0])["method"], "notifications/cancelled");
    assert_eq!((sent.len(), sent[1].method), (2, HttpMethod::Delete));
    let aborted = |e: u64| out.contains(&McpAction::Abort { exchange: e });
    assert!(!aborted(sent[0].exchange), "the cancellation goes out");
}

// ---- failures a user can act on ---------------------------------------------------------------

fn check_network(url: &str, page: &str, message: &str, fix_has: &[&str]) {
    let f = network_failure(url, page);
    assert_eq!(f.message, message, "{url} from {page}");
    let fix = f.fix.unwrap_or_default();
    for part in fix_has {
        assert!(fix.contains(part), "{url} from {page}: {fix}");
    }
}

#[test]
fn a_server_out_of_reach_gets_the_cors_headers_or_the_mixed_content_rule() {
    let cors = [
        "Access-Control-Allow-Origin: https://app.example",
        "Access-Control-Allow-Headers: content-type, authorization, mcp-protocol-version, mcp-session-id, last-event-id",
        "Access-Control-Expose-Headers: mcp-session-id",
        "Access-Control-Allow-Methods: GET, POST, DELETE, OPTIONS",
    ];
    check_network(
        "https://mcp.example/mcp",
        PAGE,
        "Can't reach the MCP server at https://mcp.example.",
        &cors,
    );
    check_network(
        "http://localhost:3001/mcp",
        PAGE,
        "Can't reach the MCP server at http://localhost:3001.",
        &cors,
    );
    check_network(
        "http://127.0.0.1:3001/mcp",
        "http://127.0.0.1:8080",
        "Can't reach the MCP server at http://127.0.0.1:3001.",
        &["Access-Control-Allow-Origin: http://127.0.0.1:8080"],
    );
    check_network(
        "https://app.example/mcp",
        PAGE,
        "Can't reach the MCP server at https://app.example.",
        &["is running"],
    );
    check_network("http://mcp.example/mcp", PAGE, "This page can't call the MCP server at http://mcp.example: it is plain http and the page is https.", &["mixed content", "only localhost is exempt"]);
    check_network("http://192.168.1.5:3001/mcp", PAGE, "This page can't call the MCP server at http://192.168.1.5:3001: it is plain http and the page is https.", &["https://"]);
}

#[test]
fn mixed_content_spares_loopback_and_http_pages() {
    assert!(mixed_content("http://mcp.example/mcp", PAGE).is_some());
    assert!(mixed_content("http://localhost:3001/mcp", PAGE).is_none());
    assert!(mixed_content("http://127.0.0.1:3001/mcp", PAGE).is_none());
    assert!(mixed_content("http://[::1]:3001/mcp", PAGE).is_none());
    assert!(mixed_content("http://mcp.example/mcp", "http://app.example").is_none());
    assert!(mixed_content("https://mcp.example/mcp", PAGE).is_none());
}

#[test]
fn connect_refuses_mixed_content_before_any_request() {
    let mut c = McpClient::new(McpConfig {
        url: "http://mcp.example/mcp".into(),
        ..config()
    });
    c.connect(0);
    let out = drain(&mut c);
    assert!(requests(&out).is_empty());
    assert!(matches!(&out[..], [McpAction::Failed(f)] if f.message.contains("plain http")));
}

#[test]
fn a_fetch_failure_fails_the_connection_with_the_cors_fix() {
    let mut c = McpClient::new(config());
    c.connect(0);
    let init = only_request(&mut c);
    c.handle_fetch_failed(init.exchange, 0);
    let out = drain(&mut c);
    assert!(
        matches!(&out[..], [McpAction::Failed(f)] if f.kind == FailureKind::Network && f.text().contains("Access-Control-Expose-Headers: mcp-session-id"))
    );
}

fn check_http(status: u16, body: &str, has_token: bool, kind: FailureKind, message: &str) {
    let f = http_failure(status, body, has_token);
    assert_eq!(
        (f.kind, f.message.as_str(), f.status),
        (kind, message, Some(status))
    );
}

#[test]
fn error_statuses_say_what_to_do() {
    check_http(
        401,
        "",
        false,
        FailureKind::Auth,
        "The MCP server asks for a token (HTTP 401).",
    );
    check_http(
        401,
        "",
        true,
        FailureKind::Auth,
        "The MCP server refused the token (HTTP 401).",
    );
    check_http(
        403,
        "",
        true,
        FailureKind::Auth,
        "The MCP server refused the token (HTTP 403).",
    );
    check_http(
        404,
        "",
        false,
        FailureKind::NotFound,
        "No MCP server at this address (HTTP 404).",
    );
    check_http(
        500,
        "",
        false,
        FailureKind::Server,
        "The MCP server failed (HTTP 500).",
    );
    check_http(
        422,
        "",
        false,
        FailureKind::BadRequest,
        "The MCP server refused the request (HTTP 422).",
    );
    let f = http_failure(401, "<h1>invalid_token</h1>", true);
    assert!(f
        .fix
        .unwrap()
        .ends_with("The server said: \"invalid_token\""));
    let rpc = r#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}"#;
    let f = http_failure(400, rpc, false);
    assert!(f
        .fix
        .unwrap()
        .ends_with("The server said: \"Bad Request: No valid session ID provided\""));
}

#[test]
fn a_401_to_initialize_fails_with_the_token_fix() {
    let mut c = McpClient::new(McpConfig {
        token: Some("t".into()),
        ..config()
    });
    c.connect(0);
    let init = only_request(&mut c);
    answer(
        &mut c,
        init.exchange,
        401,
        "application/json",
        None,
        r#"{"error":"invalid_token"}"#,
    );
    let out = drain(&mut c);
    assert!(
        matches!(&out[..], [McpAction::Failed(f)] if f.kind == FailureKind::Auth),
        "{out:?}"
    );
}

#[test]
fn unexpected_bodies_are_quoted() {
    let f = unexpected_body("text/html", "<p>Hello</p>");
    assert_eq!(f.kind, FailureKind::Malformed);
    assert!(f
        .fix
        .as_deref()
        .unwrap()
        .contains("this one sent text/html: \"Hello\""));
    assert!(unexpected_body("", "")
        .fix
        .unwrap()
        .contains("an empty body (no content type)"));
}

#[test]
fn a_call_before_the_handshake_waits_for_it() {
    let mut c = McpClient::new(config());
    c.connect(0);
    c.call_tool("c1", "echo", "{}", 0);
    let init = only_request(&mut c);
    json_answer(
        &mut c,
        init.exchange,
        json!({"jsonrpc": "2.0", "id": 1, "result": init_result(LATEST_PROTOCOL_VERSION)}),
    );
    let methods: Vec<Value> = requests(&drain(&mut c))
        .iter()
        .map(|h| body(h)["method"].clone())
        .collect();
    assert_eq!(
        methods,
        ["notifications/initialized", "tools/list", "tools/call"]
    );
}

// ---- the standing GET stream and resumption -----------------------------------------------------

#[test]
fn once_initialized_a_standing_get_listens_and_405_is_fine() {
    let (mut c, listen) = ready_listening(config());
    assert_eq!(
        (listen.method, listen.url.as_str(), listen.body.as_deref()),
        (HttpMethod::Get, URL, None)
    );
    let h = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(
        listen.headers,
        [
            h("Accept", "text/event-stream"),
            h("Mcp-Session-Id", "s1"),
            h("MCP-Protocol-Version", LATEST_PROTOCOL_VERSION)
        ]
    );
    answer(&mut c, listen.exchange, 405, "", None, "");
    assert!(drain(&mut c).is_empty());
    assert!(c.is_ready());
}

#[test]
fn list_changed_on_the_standing_stream_lists_again() {
    let (mut c, listen) = ready_listening(config());
    c.handle_head(listen.exchange, 200, "text/event-stream", None, 0);
    let changed = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
    c.handle_body(listen.exchange, sse(&[changed]).as_bytes(), 0);
    let out = requests(&drain(&mut c));
    assert_eq!(
        out.iter()
            .map(|h| body(h)["method"].clone())
            .collect::<Vec<_>>(),
        ["tools/list"]
    );
}

/// A call whose answer stream closes after `first` (SSE text); the actions after its end.
fn closed_early(first: &str) -> (McpClient, McpHttp, Vec<McpAction>) {
    let mut c = ready();
    let h = call(&mut c, "c1");
    answer(&mut c, h.exchange, 200, "text/event-stream", None, first);
    let out = drain(&mut c);
    (c, h, out)
}

#[test]
fn an_answer_stream_closed_early_is_resumed_after_its_retry() {
    let (mut c, _, out) = closed_early("id: e1\nretry: 500\ndata:\n\n");
    assert!(out.is_empty(), "{out:?}");
    assert_eq!(c.poll_timeout(), Some(500));
    c.handle_timeout(499);
    assert!(drain(&mut c).is_empty());
    c.handle_timeout(500);
    let get = only_request(&mut c);
    assert_eq!((get.method, get.url.as_str()), (HttpMethod::Get, URL));
    assert_eq!(header(&get, "Last-Event-ID"), Some("e1"));
    assert_eq!(header(&get, "Mcp-Session-Id"), Some("s1"));
    let result = json!({"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "late"}]}});
    answer(
        &mut c,
        get.exchange,
        200,
        "text/event-stream",
        None,
        &format!("id: e2\ndata: {result}\n\n"),
    );
    let out = drain(&mut c);
    assert_eq!(call_done(&out).unwrap().1.unwrap().text, "late");
    assert!(
        out.contains(&McpAction::Abort {
            exchange: get.exchange
        }),
        "the server may keep a GET open"
    );
}

#[test]
fn a_resumption_without_progress_or_an_id_fails() {
    let (_, _, out) = closed_early("data:\n\n");
    assert!(call_done(&out)
        .unwrap()
        .1
        .unwrap_err()
        .1
        .contains("ended without the answer"));
    let (mut c, _, _) = closed_early("id: e1\ndata:\n\n");
    assert_eq!(c.poll_timeout(), Some(DEFAULT_RETRY_MS as i64));
    c.handle_timeout(DEFAULT_RETRY_MS as i64);
    let get = only_request(&mut c);
    answer(&mut c, get.exchange, 200, "text/event-stream", None, "");
    assert!(call_done(&drain(&mut c)).unwrap().1.is_err());
    let (mut c, _, _) = closed_early("id: e1\ndata:\n\n");
    c.handle_timeout(DEFAULT_RETRY_MS as i64);
    let get = only_request(&mut c);
    answer(&mut c, get.exchange, 404, "", None, "");
    let out = drain(&mut c);
    assert!(
        requests(&out).is_empty(),
        "a call that may have run is never sent again"
    );
    assert_eq!(
        call_done(&out).unwrap().1.unwrap_err().0,
        FailureKind::SessionGone
    );
}

#[test]
fn a_session_id_the_page_cannot_read_names_the_expose_header() {
    assert!(session_header_hidden(URL, PAGE).is_some_and(|f| f
        .text()
        .contains("Access-Control-Expose-Headers: mcp-session-id")));
    assert!(session_header_hidden(URL, "https://mcp.example").is_none());
    let mut c = McpClient::new(config());
    c.connect(0);
    let init = only_request(&mut c);
    // The server set Mcp-Session-Id, but CORS hid it: the page saw none.
    json_answer(
        &mut c,
        init.exchange,
        json!({"jsonrpc": "2.0", "id": 1, "result": init_result(LATEST_PROTOCOL_VERSION)}),
    );
    let list = requests(&drain(&mut c))[1].clone();
    assert_eq!(header(&list, "Mcp-Session-Id"), None);
    let refusal = r#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}"#;
    answer(
        &mut c,
        list.exchange,
        400,
        "application/json",
        None,
        refusal,
    );
    let out = drain(&mut c);
    assert!(
        matches!(&out[..], [.., McpAction::Failed(f)] if f.message.contains("hides its session id")),
        "{out:?}"
    );
}

#[test]
fn the_standing_stream_reconnects_after_its_retry() {
    let (mut c, listen) = ready_listening(config());
    answer(
        &mut c,
        listen.exchange,
        200,
        "text/event-stream",
        None,
        "id: g1\nretry: 300\ndata:\n\n",
    );
    assert!(drain(&mut c).is_empty());
    assert_eq!(c.poll_timeout(), Some(300));
    c.handle_timeout(300);
    let again = only_request(&mut c);
    assert_eq!(
        (again.method, header(&again, "Last-Event-ID")),
        (HttpMethod::Get, Some("g1"))
    );
    // Closed without any event (or without an id): no more reconnections.
    answer(&mut c, again.exchange, 200, "text/event-stream", None, "");
    assert_eq!(c.poll_timeout(), None);
    let (mut c, listen) = ready_listening(config());
    answer(
        &mut c,
        listen.exchange,
        200,
        "text/event-stream",
        None,
        "data:\n\n",
    );
    assert_eq!(c.poll_timeout(), None);
}
