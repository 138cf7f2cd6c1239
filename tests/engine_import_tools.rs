#![cfg(not(target_arch = "wasm32"))]
//! Imports keep the tool calls their export kept (`engine::import::formats`): ChatGPT's calls (an
//! assistant message to a `recipient`) and `tool` messages, Claude's `tool_use` and `tool_result`
//! blocks, as `ToolCall`s on the reply with their results; a result paired by id, else by name;
//! a call without a result not run; a failure kept as one; what cannot be placed counted as left
//! out. Small exports written here, as each app writes them.

use memoire::engine::backup::ImportLimits;
use memoire::engine::import::{detect, to_bundles, Detected, Imported};
use memoire::engine::model::{Role, ToolStatus};
use serde_json::{json, Value};

fn imported(export: &Value) -> Imported {
    match detect(export.to_string().as_bytes(), &ImportLimits::default()) {
        Ok(Detected::Foreign(i)) => i,
        Ok(Detected::Backup(_)) => panic!("read as a Memoire backup"),
        Err(e) => panic!("not imported: {e}"),
    }
}

/// Each stored message as `u: text` / `a: text`, then one line per call:
/// `  name args -> result (status)`.
fn lines(export: &Value) -> Vec<String> {
    let i = imported(export);
    let b = &to_bundles(&i, 1_763_700_000_000)[0];
    let mut out = Vec::new();
    for m in &b.messages {
        let r = if m.role == Role::User { "u" } else { "a" };
        out.push(format!("{r}: {}", m.content));
        for c in &m.meta.tool_calls {
            let result = c.result.as_deref().unwrap_or("-");
            let status = c.status().as_str();
            out.push(format!(
                "  {} {} -> {result} ({status})",
                c.name, c.arguments
            ));
        }
    }
    out
}

fn check(export: Value, expected: &[&str], tool_items_left_out: usize) {
    assert_eq!(lines(&export), expected);
    assert_eq!(imported(&export).skipped.tool, tool_items_left_out);
}

// ---- ChatGPT --------------------------------------------------------------------------------------

/// A ChatGPT node: `(id, role, author name, recipient, content)`, each the parent of the next.
fn chatgpt(nodes: &[(&str, &str, Option<&str>, &str, Value)]) -> Value {
    let mut mapping = serde_json::Map::new();
    mapping.insert(
        "root".into(),
        json!({"id": "root", "message": null, "parent": null, "children": [nodes[0].0]}),
    );
    for (i, (id, role, name, to, content)) in nodes.iter().enumerate() {
        let parent = if i == 0 { "root" } else { nodes[i - 1].0 };
        let children: Vec<&str> = nodes.get(i + 1).map(|n| n.0).into_iter().collect();
        let message = json!({"id": id, "author": {"role": role, "name": name, "metadata": {}},
            "create_time": 1714000000.0 + i as f64, "content": content, "status": "finished_successfully",
            "metadata": {}, "recipient": to});
        mapping.insert(
            id.to_string(),
            json!({"id": id, "message": message, "parent": parent, "children": children}),
        );
    }
    let last = nodes.last().unwrap().0;
    json!([{"title": "Tools", "create_time": 1714000000.0, "update_time": 1714000100.0, "mapping": mapping,
        "current_node": last, "conversation_id": "6630a1b2-0000-4000-8000-00000000aaaa"}])
}

fn text(t: &str) -> Value {
    json!({"content_type": "text", "parts": [t]})
}

fn code(t: &str) -> Value {
    json!({"content_type": "code", "language": "unknown", "text": t})
}

fn output(t: &str) -> Value {
    json!({"content_type": "execution_output", "text": t})
}

fn browsing(t: &str) -> Value {
    json!({"content_type": "tether_browsing_display", "result": t, "summary": null})
}

fn failure(t: &str) -> Value {
    json!({"content_type": "system_error", "name": "tool_error", "text": t})
}

#[test]
fn chatgpt_calls_and_tool_messages_become_the_replys_tool_calls() {
    let u = ("u", "user", None, "all", text("What is 2**10?"));
    let call = ("c", "assistant", None, "python", code("print(2**10)"));
    let result = ("t", "tool", Some("python"), "all", output("1024"));
    let reply = ("a", "assistant", None, "all", text("It is 1024."));
    check(
        chatgpt(&[u.clone(), call.clone(), result.clone(), reply.clone()]),
        &[
            "u: What is 2**10?",
            "a: It is 1024.",
            "  python print(2**10) -> 1024 (done)",
        ],
        0,
    );
    // Browsing: its display is the result.
    let browse = (
        "c",
        "assistant",
        None,
        "browser",
        code("search(\"leptos\")"),
    );
    let shown = (
        "t",
        "tool",
        Some("browser"),
        "all",
        browsing("Leptos is a framework"),
    );
    check(
        chatgpt(&[u.clone(), browse, shown, reply.clone()]),
        &[
            "u: What is 2**10?",
            "a: It is 1024.",
            "  browser search(\"leptos\") -> Leptos is a framework (done)",
        ],
        0,
    );
    // A tool that failed is kept as a failure; a call never answered as not run.
    let failed = ("t", "tool", Some("python"), "all", failure("timeout"));
    check(
        chatgpt(&[u.clone(), call.clone(), failed, reply.clone()]),
        &[
            "u: What is 2**10?",
            "a: It is 1024.",
            "  python print(2**10) -> timeout (failed)",
        ],
        0,
    );
    check(
        chatgpt(&[u.clone(), call.clone(), reply.clone()]),
        &[
            "u: What is 2**10?",
            "a: It is 1024.",
            "  python print(2**10) -> - (interrupted)",
        ],
        0,
    );
    // Calls after the turn's last reply go on it; a turn without a reply leaves them out.
    let next = ("u2", "user", None, "all", text("Thanks"));
    check(
        chatgpt(&[
            u.clone(),
            reply.clone(),
            call.clone(),
            result.clone(),
            next.clone(),
        ]),
        &[
            "u: What is 2**10?",
            "a: It is 1024.",
            "  python print(2**10) -> 1024 (done)",
            "u: Thanks",
        ],
        0,
    );
    check(
        chatgpt(&[u.clone(), call.clone(), result.clone(), next]),
        &["u: What is 2**10?", "u: Thanks"],
        2,
    );
    // A tool message no call asked for stays left out.
    check(
        chatgpt(&[u, result, reply]),
        &["u: What is 2**10?", "a: It is 1024."],
        1,
    );
}

// ---- Claude ---------------------------------------------------------------------------------------

/// A Claude.ai export of "find x" and a reply of `blocks`.
fn claude(blocks: Value) -> Value {
    json!([{"uuid": "conv-1", "name": "Tools", "created_at": "2025-02-10T09:15:00.000000Z",
        "updated_at": "2025-02-10T09:16:00.000000Z", "chat_messages": [
        {"uuid": "m-1", "text": "find x", "content": [{"type": "text", "text": "find x"}], "sender": "human",
         "created_at": "2025-02-10T09:15:01.000000Z", "attachments": [], "files": []},
        {"uuid": "m-2", "text": "", "content": blocks, "sender": "assistant",
         "created_at": "2025-02-10T09:15:20.000000Z", "attachments": [], "files": []}]}])
}

fn tool_use(id: Option<&str>, name: &str) -> Value {
    let mut b = json!({"type": "tool_use", "name": name, "input": {"q": "x"}});
    if let Some(id) = id {
        b["id"] = json!(id);
    }
    b
}

fn tool_result(id: Option<&str>, name: &str, text: &str, is_error: bool) -> Value {
    let mut b = json!({"type": "tool_result", "name": name, "content": [{"type": "text", "text": text}], "is_error": is_error});
    if let Some(id) = id {
        b["tool_use_id"] = json!(id);
    }
    b
}

fn said(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

#[test]
fn claude_tool_use_and_tool_result_blocks_become_the_replys_tool_calls() {
    let q = r#"{"q":"x"}"#;
    check(
        claude(json!([
            tool_use(None, "web_search"),
            tool_result(None, "web_search", "x is 1", false),
            said("x is 1.")
        ])),
        &[
            "u: find x",
            "a: x is 1.",
            &format!("  web_search {q} -> x is 1 (done)"),
        ],
        0,
    );
    // Paired by id, whatever the order of the results.
    check(
        claude(json!([
            tool_use(Some("t1"), "a"),
            tool_use(Some("t2"), "a"),
            tool_result(Some("t2"), "a", "two", false),
            tool_result(Some("t1"), "a", "one", false),
            said("ok")
        ])),
        &[
            "u: find x",
            "a: ok",
            &format!("  a {q} -> one (done)"),
            &format!("  a {q} -> two (done)"),
        ],
        0,
    );
    check(
        claude(json!([
            tool_use(None, "web_search"),
            tool_result(None, "web_search", "no network", true),
            said("Sorry.")
        ])),
        &[
            "u: find x",
            "a: Sorry.",
            &format!("  web_search {q} -> no network (failed)"),
        ],
        0,
    );
    // A reply of calls alone is kept; a call without a result did not run.
    check(
        claude(json!([tool_use(Some("t1"), "web_search")])),
        &[
            "u: find x",
            "a: ",
            &format!("  web_search {q} -> - (interrupted)"),
        ],
        0,
    );
    // A result no call asked for is left out.
    check(
        claude(json!([
            tool_result(Some("zz"), "web_search", "stray", false),
            said("ok")
        ])),
        &["u: find x", "a: ok"],
        1,
    );
}

#[test]
fn an_imported_result_is_capped() {
    let long = "y".repeat(30_000);
    let export = claude(json!([
        tool_use(None, "web_search"),
        tool_result(None, "web_search", &long, false),
        said("ok")
    ]));
    let i = imported(&export);
    let b = &to_bundles(&i, 0)[0];
    let call = &b.messages[1].meta.tool_calls[0];
    let kept = call.result.as_deref().unwrap().chars().count();
    assert!(kept < 21_000, "{kept}");
    assert_eq!(call.status(), ToolStatus::Done);
}
