//! The MCP client (`engine::mcp::McpClient`) against real servers, driven over HTTP by the bench's
//! own driver (`benches/mcp_http/`); needs node and tests/e2e/node_modules (`scripts/setup.sh`):
//! - `mcp_conformance_client_pass_rate`: the client scenarios of the MCP conformance suite
//!   (`@modelcontextprotocol/conformance`) that apply to a tools client, passed ÷ applicable. The
//!   suite starts each scenario's server and runs this same binary as the client (it sets
//!   `MCP_CONFORMANCE_SCENARIO` and appends the server's URL): connect, list the tools, call each
//!   with arguments made from its schema's required properties, close. A scenario passes as the
//!   suite's own tally counts it: no check failed and at least one succeeded.
//!   Applicable: `initialize` (the handshake: version, clientInfo), `tools_call` (a tool called
//!   with its arguments), `sse-retry` (an answer stream closed before its answer, resumed by GET
//!   with `Last-Event-ID` after the stream's `retry`), and any scenario this list does not name
//!   (a newer suite's scenario counts until it is sorted here).
//!   Not applicable: `auth/*` (OAuth 2.1 authorization: discovery, dynamic registration, scopes,
//!   token endpoints; Memoire sends a bearer token the user pasted and runs no OAuth flow) and
//!   `elicitation-sep1034-client-defaults` (the server asks the user for input through the client;
//!   Memoire declares no `elicitation` capability, and answers it, as sampling and roots, with
//!   -32601). The suite (0.1.16) has no other client scenario. It needs Node 22's `fs.globSync`
//!   at load time (for its `tier-check` command only); under an older node the bench loads it with
//!   `benches/mcp_http/node20.mjs`, which gives that one import a stand-in.
//! - `tool_round_trip_overhead_ms`: `@modelcontextprotocol/server-everything` over Streamable
//!   HTTP on a free loopback port, its `echo` tool called 200 times one after another: the median of
//!   the time from `call_tool` to the client's `CallDone` less the time the exchange spent on the
//!   wire (from its connection being opened to the bytes that completed the answer being read):
//!   the engine's own work and the driver's hand-offs (a thread per request), not the server's.
//!
//! `MCP_BENCH_VERBOSE=1` prints each scenario's checks that did not pass.

mod mcp_http;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use memoire::engine::mcp::McpAction;
use serde_json::{json, Value};

/// Client scenarios that do not apply to a tools client (header: why).
fn not_applicable(scenario: &str) -> bool {
    scenario.starts_with("auth/") || scenario.starts_with("elicitation")
}

fn main() {
    if let Ok(scenario) = std::env::var("MCP_CONFORMANCE_SCENARIO") {
        let url = std::env::args().last().unwrap_or_default();
        std::process::exit(conformance_client(&scenario, &url));
    }
    let e2e = repo().join("tests/e2e");
    if !e2e
        .join("node_modules/@modelcontextprotocol/conformance")
        .exists()
    {
        eprintln!("tests/e2e/node_modules is missing (scripts/setup.sh installs it)");
        std::process::exit(1);
    }
    let rate = conformance(&e2e);
    println!("bench mcp_conformance_client_pass_rate {rate:.2} ratio");
    let ms = echo_overhead_ms(&e2e, 200);
    println!("bench tool_round_trip_overhead_ms {ms:.3} ms");
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

// ---- the suite ----------------------------------------------------------------------------------

/// node with the suite's loader shim when this node lacks `fs.globSync` (header).
fn suite(e2e: &Path) -> Command {
    let mut c = Command::new("node");
    let new_enough = Command::new("node")
        .args(["-e", "process.exit(require('fs').globSync ? 0 : 1)"])
        .status()
        .is_ok_and(|s| s.success());
    if !new_enough {
        c.arg("--import")
            .arg(repo().join("benches/mcp_http/node20.mjs"));
    }
    c.arg(e2e.join("node_modules/@modelcontextprotocol/conformance/dist/index.js"));
    c.current_dir(e2e);
    c
}

fn client_scenarios(e2e: &Path) -> Vec<String> {
    let out = suite(e2e).arg("list").output().expect("node runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let client = text.split("Client scenarios").nth(1).unwrap_or("");
    client
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- "))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

fn conformance(e2e: &Path) -> f64 {
    let all = client_scenarios(e2e);
    assert!(!all.is_empty(), "the suite listed no client scenario");
    let me = std::env::current_exe().expect("the bench's own path");
    let applicable: Vec<&String> = all.iter().filter(|s| !not_applicable(s)).collect();
    let mut passed = 0;
    for s in &applicable {
        let ok = run_scenario(e2e, &me, s);
        eprintln!("scenario {s}: {}", if ok { "pass" } else { "FAIL" });
        passed += ok as usize;
    }
    for s in all.iter().filter(|s| not_applicable(s)) {
        eprintln!("scenario {s}: not applicable to a tools client");
    }
    passed as f64 / applicable.len() as f64
}

/// One scenario: the suite runs this binary against its server; passed as its tally counts.
fn run_scenario(e2e: &Path, me: &Path, scenario: &str) -> bool {
    let out = std::env::temp_dir().join(format!(
        "memoire-mcp-conformance-{}-{}",
        std::process::id(),
        scenario.replace('/', "_")
    ));
    let _ = std::fs::remove_dir_all(&out);
    let status = suite(e2e)
        .args(["client", "--scenario", scenario, "--timeout", "30000", "-o"])
        .arg(&out)
        .arg("--command")
        .arg(me)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    let checks = find_checks(&out).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&out);
    let status_of = |c: &Value| c["status"].as_str().unwrap_or("").to_string();
    let failed: Vec<&Value> = checks
        .iter()
        .filter(|c| status_of(c) == "FAILURE")
        .collect();
    let succeeded = checks.iter().any(|c| status_of(c) == "SUCCESS");
    if std::env::var_os("MCP_BENCH_VERBOSE").is_some() || status.is_err() {
        for c in &failed {
            eprintln!("  {scenario}: {} {}", c["id"], c["errorMessage"]);
        }
    }
    failed.is_empty() && succeeded
}

fn find_checks(dir: &Path) -> Option<Vec<Value>> {
    for e in std::fs::read_dir(dir).ok()?.flatten() {
        let p = e.path();
        if p.is_dir() {
            if let Some(c) = find_checks(&p) {
                return Some(c);
            }
        } else if p.file_name().is_some_and(|n| n == "checks.json") {
            let text = std::fs::read_to_string(&p).ok()?;
            return serde_json::from_str::<Vec<Value>>(&text).ok();
        }
    }
    None
}

// ---- the client the suite runs --------------------------------------------------------------------

/// Arguments for a tool from its schema: each required property a value of its type.
fn arguments(schema: &Value) -> Value {
    let mut args = serde_json::Map::new();
    let props = &schema["properties"];
    for name in schema["required"].as_array().into_iter().flatten() {
        let Some(name) = name.as_str() else { continue };
        let v = match props[name]["type"].as_str().unwrap_or("string") {
            "number" | "integer" => json!(2),
            "boolean" => json!(true),
            "array" => json!([]),
            "object" => json!({}),
            _ => json!("memoire"),
        };
        args.insert(name.to_string(), v);
    }
    Value::Object(args)
}

/// Connects, lists, calls every tool, closes; 0 when every step came through.
fn conformance_client(scenario: &str, url: &str) -> i32 {
    let mut d = mcp_http::Driver::new(url, 10_000);
    let limit = Duration::from_secs(20);
    let now = d.now();
    d.client.connect(now);
    let got = d.until(limit, |a| {
        matches!(a, McpAction::Tools { .. } | McpAction::Failed(_))
    });
    let defs = match got
        .ok()
        .and_then(|g| g.into_iter().last())
        .map(|o| o.action)
    {
        Some(McpAction::Tools { defs, .. }) => defs,
        other => {
            eprintln!("{scenario}: no tool list: {other:?}");
            return 1;
        }
    };
    let mut code = 0;
    for (i, t) in defs.iter().enumerate() {
        let schema: Value = serde_json::from_str(&t.parameters).unwrap_or(Value::Null);
        let call_id = format!("call-{i}");
        let now = d.now();
        d.client
            .call_tool(&call_id, &t.name, &arguments(&schema).to_string(), now);
        let done = d.until(
            limit,
            |a| matches!(a, McpAction::CallDone { call_id: c, .. } if *c == call_id),
        );
        match done
            .ok()
            .and_then(|g| g.into_iter().last())
            .map(|o| o.action)
        {
            Some(McpAction::CallDone {
                result: Ok(out), ..
            }) => {
                println!("{}: {}", t.name, out.text)
            }
            other => {
                eprintln!("{}: {other:?}", t.name);
                code = 1;
            }
        }
    }
    let now = d.now();
    d.client.close(now);
    let _ = d.until(Duration::from_secs(2), |a| matches!(a, McpAction::Closed));
    code
}

// ---- the echo round trip ------------------------------------------------------------------------

/// A free loopback port (bound, read, released).
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    l.local_addr().expect("its address").port()
}

struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn echo_overhead_ms(e2e: &Path, calls: usize) -> f64 {
    let port = free_port();
    let _server = Server(
        Command::new("node")
            .arg(e2e.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js"))
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("node starts server-everything"),
    );
    let up = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            up.elapsed() < Duration::from_secs(30),
            "server-everything did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let url = format!("http://127.0.0.1:{port}/mcp");
    let mut d = mcp_http::Driver::new(&url, 10_000);
    let limit = Duration::from_secs(20);
    let now = d.now();
    d.client.connect(now);
    let got = d.until(limit, |a| {
        matches!(a, McpAction::Tools { .. } | McpAction::Failed(_))
    });
    let listed = matches!(got.ok().and_then(|g| g.into_iter().last()).map(|o| o.action),
        Some(McpAction::Tools { defs, .. }) if defs.iter().any(|t| t.name == "echo"));
    assert!(listed, "server-everything listed no echo tool");
    let mut overhead = Vec::with_capacity(calls);
    for i in 0..calls {
        let call_id = format!("echo-{i}");
        let args = json!({"message": format!("round trip {i}")}).to_string();
        let t0 = Instant::now();
        let now = d.now();
        d.client.call_tool(&call_id, "echo", &args, now);
        let got = d.until(
            limit,
            |a| matches!(a, McpAction::CallDone { call_id: c, .. } if *c == call_id),
        );
        let last = got
            .ok()
            .and_then(|g| g.into_iter().last())
            .expect("the echo came back");
        let McpAction::CallDone {
            result: Ok(out), ..
        } = &last.action
        else {
            panic!("echo failed: {:?}", last.action);
        };
        assert!(
            out.text.contains(&format!("round trip {i}")),
            "{}",
            out.text
        );
        let total = last.at.duration_since(t0);
        let wire = last.wire.unwrap_or_default();
        overhead.push(total.saturating_sub(wire).as_secs_f64() * 1000.0);
    }
    let now = d.now();
    d.client.close(now);
    let _ = d.until(Duration::from_secs(2), |a| matches!(a, McpAction::Closed));
    overhead.sort_by(f64::total_cmp);
    overhead[overhead.len() / 2]
}
