//! What memory costs a single-slot local server (issue 41), in the server's own accounting: a 30-turn
//! conversation (`common::reuse::TURNS`, long enough to outgrow the history window) against
//! llama-cpp-python with SmolLM2-135M at its defaults (one slot, so one KV cache; `scripts/bench.sh`
//! starts it verbose and passes its log in `MEMOIRE_LLAMA_LOG`, its URL in `MEMOIRE_LLAMA_URL`), once
//! with memory at the app's defaults and once with updates as rare as Settings allow (what a plain
//! chat client costs). Every prompt is the app's own (`common::reuse::converse`: the anchor, the
//! update continuing the chat prompt, the title); every reply is the model's.
//! - `prompt_reuse_single_slot_memory_on` / `_plain`: prompt tokens the server took from its cache
//!   over the prompt tokens it was sent (its `N prefix-match hit, remaining M prompt tokens to eval`
//!   lines; a request without one reused nothing, its size is the reply's `usage.prompt_tokens`);
//! - `prompt_tokens_read_again_ratio`: the tokens read again with memory on over those of the plain run;
//! - `first_token_turn_30_ms_memory_on` / `_plain`: the 30th turn's time to its first token.
//! `MEMOIRE_REUSE_RECORD=<file>` writes the memory-on run's replies (and the form of each update) as the
//! fixture `tests/engine_prefix.rs` replays without a server (`tests/fixtures/prompt_reuse.json`).
//! `MEMOIRE_REUSE_ORDER=fresh` runs the order before issue 41 (every prompt afresh), for comparison.
//! Known gap: since chat requests carry the reply cap, SmolLM2's 30 capped replies fit the app's
//! 8,192-token history, so the plain run slides nothing and reads almost nothing again; the read-again
//! ratio then compares memory's cost with ~0 and says little. The conversation needs to outgrow the
//! window again (more turns, or longer user messages) for `prompt_tokens_read_again_ratio` to mean
//! what its goal assumes.

mod common;

use std::io::{Read, Seek, SeekFrom, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::reuse::{converse, Kind, Order, Replies, TURNS};
use common::{endpoint, send};
use memoire::engine::memory::*;
use memoire::engine::model::*;
use memoire::engine::request::{self, HttpRequest, RequestOptions};

/// The server's accounting of one request.
#[derive(Debug, Clone, Copy, Default)]
struct Counted {
    reused: u64,
    read: u64,
}

/// The requests of one run against the server, with what the server said of each.
struct Server {
    endpoint: EndpointProfile,
    log: std::path::PathBuf,
    offset: u64,
    form: MemoryForm,
    counted: Vec<(Kind, Counted)>,
    /// How many chat turns went; the 30th is streamed and timed.
    turns: usize,
    first_token_ms: Option<u128>,
    /// The form each update went in (for the fixture).
    forms: Vec<String>,
    verbose: bool,
}

impl Server {
    /// The server's log since the last call.
    fn log_since(&mut self) -> String {
        let mut f = std::fs::File::open(&self.log).expect("the server's log");
        f.seek(SeekFrom::Start(self.offset)).unwrap();
        let mut text = String::new();
        f.read_to_string(&mut text).unwrap();
        self.offset += text.len() as u64;
        text
    }

    /// Records the server's accounting of the request that gave `body` (non-streamed: its usage).
    fn count(&mut self, kind: Kind, body: &str) {
        // The line comes before generation; give stderr a moment to reach the file.
        std::thread::sleep(Duration::from_millis(50));
        let log = self.log_since();
        let hit = log.lines().rev().find_map(prefix_line);
        let counted = match hit {
            Some((reused, rest)) => Counted { reused, read: rest },
            None => Counted {
                reused: 0,
                read: prompt_tokens(body).unwrap_or(0),
            },
        };
        if self.verbose {
            eprintln!(
                "[reuse] {:<6} sent {:>5} reused {:>5} read {:>5}",
                kind.as_str(),
                counted.reused + counted.read,
                counted.reused,
                counted.read
            );
        }
        self.counted.push((kind, counted));
    }

    /// One request, not streamed: the reply text and the body.
    fn exchange(&mut self, http: &HttpRequest) -> (u16, String) {
        let (status, body) = send(http, None).unwrap_or((599, Vec::new()));
        (status, String::from_utf8_lossy(&body).to_string())
    }

    fn totals(&self) -> Counted {
        self.counted
            .iter()
            .fold(Counted::default(), |a, (_, c)| Counted {
                reused: a.reused + c.reused,
                read: a.read + c.read,
            })
    }
}

/// `Llama.generate: N prefix-match hit, remaining M prompt tokens to eval` as (N, M).
fn prefix_line(line: &str) -> Option<(u64, u64)> {
    let rest = line.split("Llama.generate: ").nth(1)?;
    let (hit, rest) = rest.split_once(" prefix-match hit, remaining ")?;
    let left = rest.split_whitespace().next()?;
    Some((hit.trim().parse().ok()?, left.parse().ok()?))
}

/// `usage.prompt_tokens` of a non-streamed reply.
fn prompt_tokens(body: &str) -> Option<u64> {
    let v: serde_json::Value = serde_json::from_str(body).ok()?;
    v.get("usage")?.get("prompt_tokens")?.as_u64()
}

/// The text of a non-streamed openai-chat reply.
fn content(body: &str) -> String {
    serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            v.pointer("/choices/0/message/content")
                .and_then(|c| c.as_str())
                .map(str::to_string)
        })
        .unwrap_or_default()
}

/// A streamed request: the reply text and the time to its first token.
fn streamed(http: &HttpRequest) -> (String, u128) {
    let rest = http.url.strip_prefix("http://").expect("http");
    let (host, path) = rest.split_once('/').expect("path");
    let mut stream = TcpStream::connect(host).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(900))).ok();
    let mut head = format!(
        "{} /{path} HTTP/1.0\r\nHost: {host}\r\nContent-Length: {}\r\n",
        http.method,
        http.body.len()
    );
    for (k, v) in &http.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let t = Instant::now();
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(http.body.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let mut first = None;
    let mut buf = [0u8; 4096];
    loop {
        let n = stream.read(&mut buf).unwrap_or(0);
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&buf[..n]);
        if first.is_none() && String::from_utf8_lossy(&raw).contains("\"content\":\"") {
            let text = String::from_utf8_lossy(&raw);
            // The first delta that carries text (not the role's empty opening).
            if text
                .split("\"content\":\"")
                .skip(1)
                .any(|s| !s.starts_with('"'))
            {
                first = Some(t.elapsed().as_millis());
            }
        }
    }
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or(0);
    let body = &raw[(split + 4).min(raw.len())..];
    (
        common::reply_text(Protocol::OpenAiChat, body),
        first.unwrap_or_else(|| t.elapsed().as_millis()),
    )
}

impl Replies for Server {
    fn reply(&mut self, kind: Kind, prompt: &Prompt, options: &RequestOptions) -> String {
        let last_turn = kind == Kind::Chat && self.turns + 1 == TURNS.len();
        if kind == Kind::Chat {
            self.turns += 1;
        }
        let options = RequestOptions {
            stream: last_turn,
            ..options.clone()
        };
        let http = request::build(&self.endpoint, prompt, &options).expect("no key");
        if last_turn {
            let (text, ms) = streamed(&http);
            self.first_token_ms = Some(ms);
            self.count(kind, "");
            return text;
        }
        let (status, body) = self.exchange(&http);
        if status >= 400 {
            eprintln!("[reuse] {}: HTTP {status}: {body}", kind.as_str());
        }
        self.count(kind, &body);
        content(&body)
    }

    fn update(
        &mut self,
        req: &UpdateRequest,
        after: Option<&(Prompt, WireMessage)>,
    ) -> (String, Prompt) {
        let mut retried = false;
        loop {
            let form = self.form;
            let prompt = match after {
                Some((chat, reply)) => req.prompt_after(form, chat, reply),
                None => req.prompt_for(form),
            };
            let options = RequestOptions {
                stream: false,
                ..req.request_options(form)
            };
            let http = request::build(&self.endpoint, &prompt, &options).expect("no key");
            let (status, body) = self.exchange(&http);
            if status >= 400 && !retried && refused_http(form, status, &body) {
                if let Some(next) = next_form(self.endpoint.protocol, form) {
                    self.log_since();
                    self.form = next;
                    retried = true;
                    continue;
                }
            }
            self.count(Kind::Memory, &body);
            self.forms.push(form.as_str().to_string());
            return (content(&body), prompt);
        }
    }
}

/// One run of the conversation with `config`: the server's accounting.
fn run(
    url: &str,
    log: &std::path::Path,
    config: &MemoryConfig,
    order: Order,
    verbose: bool,
) -> Server {
    let endpoint = endpoint(url);
    let mut server = Server {
        form: start_form(endpoint.protocol, None),
        endpoint: endpoint.clone(),
        log: log.to_path_buf(),
        offset: std::fs::metadata(log).map(|m| m.len()).unwrap_or(0),
        counted: Vec::new(),
        turns: 0,
        first_token_ms: None,
        forms: Vec::new(),
        verbose,
    };
    let t = Instant::now();
    let (mem, sent) = converse(config, &endpoint, &TURNS, order, &mut server);
    let t_all = server.totals();
    eprintln!(
        "[reuse] {} requests ({} memory) in {} s: sent {}, reused {}, read again {}; {} summaries",
        sent.len(),
        sent.iter().filter(|s| s.kind == Kind::Memory).count(),
        t.elapsed().as_secs(),
        t_all.reused + t_all.read,
        t_all.reused,
        t_all.read,
        mem.summaries.len()
    );
    if let Ok(path) = std::env::var("MEMOIRE_REUSE_RECORD") {
        if config.summary_every_pairs == MemoryConfig::default().summary_every_pairs {
            let replies: Vec<serde_json::Value> = sent
                .iter()
                .map(|s| serde_json::json!({"kind": s.kind.as_str(), "reply": s.reply}))
                .collect();
            let fixture = serde_json::json!({
                "what": "The replies of one run of benches/prompt_reuse.rs (memory at the app's defaults) \
                         against llama-cpp-python 0.3.36 with SmolLM2-135M-Instruct, in request order; \
                         `forms`: the form each memory update went in. Replayed by tests/engine_prefix.rs.",
                "replies": replies,
                "forms": server.forms,
            });
            std::fs::write(&path, serde_json::to_string_pretty(&fixture).unwrap()).unwrap();
            eprintln!("[reuse] recorded the run in {path}");
        }
    }
    server
}

fn ratio(c: Counted) -> f64 {
    c.reused as f64 / (c.reused + c.read).max(1) as f64
}

fn main() {
    let (Ok(url), Ok(log)) = (
        std::env::var("MEMOIRE_LLAMA_URL"),
        std::env::var("MEMOIRE_LLAMA_LOG"),
    ) else {
        eprintln!("prompt_reuse needs MEMOIRE_LLAMA_URL and MEMOIRE_LLAMA_LOG (scripts/bench.sh sets them)");
        std::process::exit(1);
    };
    let verbose = std::env::var("MEMOIRE_REUSE_VERBOSE").is_ok();
    let order = match std::env::var("MEMOIRE_REUSE_ORDER").as_deref() {
        Ok("fresh") => Order::Fresh,
        _ => Order::Held,
    };
    let log = std::path::PathBuf::from(log);
    let on = run(&url, &log, &MemoryConfig::default(), order, verbose);
    let rare = MemoryConfig {
        summary_every_pairs: 1000,
        ..MemoryConfig::default()
    };
    let plain = run(&url, &log, &rare, order, verbose);
    let (a, b) = (on.totals(), plain.totals());
    println!(
        "bench prompt_reuse_single_slot_memory_on {:.2} ratio",
        ratio(a)
    );
    println!("bench prompt_reuse_single_slot_plain {:.2} ratio", ratio(b));
    println!(
        "bench prompt_tokens_read_again_ratio {:.2} ratio",
        a.read as f64 / b.read.max(1) as f64
    );
    println!(
        "bench first_token_turn_30_ms_memory_on {} ms",
        on.first_token_ms.unwrap_or(0)
    );
    println!(
        "bench first_token_turn_30_ms_plain {} ms",
        plain.first_token_ms.unwrap_or(0)
    );
}
