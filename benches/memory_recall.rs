//! Memory on a real model (`make bench` starts llama-cpp-python's server with SmolLM2-135M and
//! passes its URL in `MEMOIRE_LLAMA_URL`):
//! - `memory_update_parse_rate_real`: the fraction of memory updates that gave a summary or an entity;
//! - `memory_fact_recall_real`: the fraction of 10 facts, planted in the first half of a 22-turn
//!   conversation whose history cannot fit the budget, present in the last assembled prompt;
//! - `naive_last_n_fact_recall`: the same for a plain last-N window of the same token size.
//!
//! The whole memory path is the app's own engine code: `due`, `build_update_request`, the form the
//! endpoint takes (`start_form`, `next_form` on a refusal), `request::build`, the protocol's stream
//! decoder, `ReplyCollector`, `parse_reply`, `UpdateRequest::ground`, `apply_update`, then `rank_for_prompt` and `assemble` for the
//! final prompt. Only the HTTP client is the bench's: HTTP/1.0 over a loopback socket, so the server
//! frames the stream by closing the connection. `MEMOIRE_RECALL_VERBOSE=1` prints every reply.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use memoire::engine::assemble::{assemble, AssemblyInput};
use memoire::engine::decode::decoder_for;
use memoire::engine::memory::*;
use memoire::engine::model::*;
use memoire::engine::request::{self, HttpRequest};
use memoire::engine::tokens::{HeuristicEstimator, TokenEstimator};

/// (user message, the word that shows the fact survived).
const FACTS: [(&str, &str); 10] = [
    ("Hi! My name is Ingrid Valcourt.", "Valcourt"),
    ("I live in Trondheim, in Norway.", "Trondheim"),
    ("I have a cat called Zorblax.", "Zorblax"),
    ("I work as a glassblower in a small studio.", "glassblower"),
    ("My sister Odalys is visiting me next week.", "Odalys"),
    ("My favourite food is pierogi.", "pierogi"),
    ("I drive an old green Volvo.", "Volvo"),
    (
        "My daughter Maelle is learning to play the cello.",
        "Maelle",
    ),
    ("I am allergic to hazelnuts.", "hazelnuts"),
    ("I am training for the Lofoten marathon in June.", "Lofoten"),
];

/// Later turns about other things, long enough that the early history cannot fit.
const FILLER: [&str; 12] = [
    "Can you explain how ocean tides work? I always wondered why there are two a day.",
    "What is the difference between baking soda and baking powder when I bake bread?",
    "How do I keep basil alive on a windowsill during the winter months?",
    "Give me three tips for writing a clear email to a colleague I have never met.",
    "Why is the sky blue during the day but red and orange at sunset?",
    "How does a bicycle stay upright when it moves but falls over when it stops?",
    "What is a good way to learn the basics of chess openings as a beginner?",
    "Can you suggest a simple stretching routine for after a long day at a desk?",
    "How do noise cancelling headphones actually cancel the noise around me?",
    "What should I check before buying a second hand laptop from a stranger?",
    "Explain in simple words what compound interest is and why it matters.",
    "What are some easy ways to use less plastic in the kitchen every day?",
];

const FINAL: &str =
    "Before we stop: tell me everything you remember about me, my family and my life.";

const REPLY: &str = "That is a good question. In short, it depends on a few things, and the most \
important ones are the conditions around you, how much time you have, and what you want in the end. \
Start small, check the result, and adjust step by step; most people find that a steady routine works \
better than one big effort. If you want, I can go into more detail on any part of it.";

fn message(seq: u64, role: Role, content: &str) -> Message {
    Message {
        id: format!("m{seq}"),
        conversation_id: "c".into(),
        seq,
        role,
        content: content.into(),
        status: MessageStatus::Complete,
        created_at: seq as i64 * 60_000,
        meta: MessageMeta::default(),
    }
}

fn endpoint(url: &str) -> EndpointProfile {
    EndpointProfile {
        id: "bench".into(),
        base_url: url.into(),
        protocol: Protocol::OpenAiChat,
        model: "smollm2-135m".into(),
        api_key: None,
        system_prompt: "You are a helpful assistant.".into(),
    }
}

/// What one HTTP exchange gave: the status and the body.
fn send(req: &HttpRequest) -> Result<(u16, Vec<u8>), String> {
    let rest = req.url.strip_prefix("http://").ok_or("only http:// URLs")?;
    let (host, path) = rest.split_once('/').ok_or("no path")?;
    let mut stream = TcpStream::connect(host).map_err(|e| format!("connect {host}: {e}"))?;
    stream.set_read_timeout(Some(Duration::from_secs(600))).ok();
    let mut head = format!(
        "{} /{path} HTTP/1.0\r\nHost: {host}\r\nContent-Length: {}\r\n",
        req.method,
        req.body.len()
    );
    for (k, v) in &req.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream
        .write_all(head.as_bytes())
        .map_err(|e| e.to_string())?;
    stream
        .write_all(req.body.as_bytes())
        .map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).map_err(|e| e.to_string())?;
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("no header end")?;
    let status_line = String::from_utf8_lossy(&raw[..split]).to_string();
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or("no status")?;
    Ok((status, raw[split + 4..].to_vec()))
}

/// One memory update through the engine: the reply text, or why there is none.
fn ask(
    endpoint: &EndpointProfile,
    req: &UpdateRequest,
    form: &mut MemoryForm,
) -> Result<String, String> {
    let mut retried = false;
    loop {
        let http = request::build(
            endpoint,
            &req.prompt_for(*form),
            &req.request_options(*form),
        );
        let (status, body) = send(&http)?;
        if status >= 400 {
            let text = String::from_utf8_lossy(&body).to_string();
            if !retried && refused_http(*form, status, &text) {
                if let Some(next) = next_form(endpoint.protocol, *form) {
                    eprintln!(
                        "[recall] {} refused ({status}); trying {}",
                        form.as_str(),
                        next.as_str()
                    );
                    *form = next;
                    retried = true;
                    continue;
                }
            }
            return Err(format!("HTTP {status}: {text}"));
        }
        if std::env::var("MEMOIRE_RECALL_DUMP").is_ok() {
            std::fs::write("/tmp/recall-request.json", &http.body).ok();
            std::fs::write("/tmp/recall-response.txt", &body).ok();
        }
        let mut decoder = decoder_for(endpoint.protocol);
        let mut collector = ReplyCollector::new(*form);
        decoder.handle_bytes(&body);
        decoder.handle_eof();
        while let Some(ev) = decoder.poll_event() {
            if let Some(done) = collector.handle_event(ev) {
                return done.map_err(|e| e.message);
            }
        }
        unreachable!("engine::decode ends every body with Done or Error");
    }
}

fn facts_in(text: &str) -> usize {
    let lower = text.to_lowercase();
    FACTS
        .iter()
        .filter(|(_, w)| lower.contains(&w.to_lowercase()))
        .count()
}

fn main() {
    let Ok(url) = std::env::var("MEMOIRE_LLAMA_URL") else {
        eprintln!("memory_recall: set MEMOIRE_LLAMA_URL (scripts/bench.sh starts the real server)");
        std::process::exit(2);
    };
    let verbose = std::env::var("MEMOIRE_RECALL_VERBOSE").is_ok();
    let endpoint = endpoint(&url);
    let config = MemoryConfig {
        recent_messages: 4,
        summary_every_pairs: 1,
        context_tokens: 1400,
        reply_reserve_tokens: 400,
        ..MemoryConfig::default()
    };
    let mut messages: Vec<Message> = Vec::new();
    let mut summaries: Vec<ConversationSummary> = Vec::new();
    let mut graph = Graph::new(Vec::new());
    let mut form = start_form(endpoint.protocol, None);
    let (mut updates, mut parsed_ok) = (0u32, 0u32);
    let mut ids = 0u64;
    let turns: Vec<&str> = FACTS
        .iter()
        .map(|(m, _)| *m)
        .chain(std::iter::once(
            "What is a good name for a small wooden boat?",
        ))
        .chain(FILLER.iter().copied())
        .collect();
    let started = Instant::now();
    for user in &turns {
        let seq = messages.len() as u64 + 1;
        messages.push(message(seq, Role::User, user));
        messages.push(message(seq + 1, Role::Assistant, REPLY));
        let previous = latest(&summaries).cloned();
        let decision = due(DueInput {
            messages: &messages,
            covers_up_to_seq: previous.as_ref().map(|s| s.covers_up_to_seq),
            every_pairs: config.summary_every_pairs,
            over_budget: false,
        });
        if !decision.is_due() {
            continue;
        }
        let req = build_update_request(
            previous.as_ref(),
            &messages,
            graph.nodes(),
            &UpdateLimits::from_config(&MemoryConfig {
                context_tokens: 8192,
                ..config.clone()
            }),
        )
        .expect("messages to summarise");
        updates += 1;
        let t = Instant::now();
        let reply = ask(&endpoint, &req, &mut form);
        let parsed = reply
            .as_deref()
            .map_err(Clone::clone)
            .and_then(|r| parse_reply(r).map_err(|e| e.to_string()))
            .map(|mut p| {
                req.ground(&mut p);
                p
            });
        if verbose {
            eprintln!(
                "[recall] update {updates} ({} ms, {}): {reply:?}\n  -> {parsed:?}",
                t.elapsed().as_millis(),
                form.as_str()
            );
        }
        if let Ok(p) = parsed {
            parsed_ok += 1;
            let applied = apply_update(
                &p,
                previous.as_ref(),
                "c",
                &req.span,
                messages.len() as u64,
                &mut graph,
                EntityScope::Conversation("c".into()),
                seq as i64 * 60_000,
                summary_max_chars(&config),
                || {
                    ids += 1;
                    format!("e{ids}")
                },
            );
            summaries.extend(applied.summary);
        }
    }

    // The last prompt, assembled as the app does.
    let new = message(messages.len() as u64 + 1, Role::User, FINAL);
    let recent: Vec<&str> = messages
        .iter()
        .rev()
        .take(config.recent_messages)
        .map(|m| m.content.as_str())
        .chain(std::iter::once(FINAL))
        .collect();
    let now = new.created_at;
    let ranked: Vec<EntityNode> = rank_for_prompt(&graph, &recent, now)
        .into_iter()
        .cloned()
        .collect();
    let assembly = assemble(
        &AssemblyInput {
            system_prompt: &endpoint.system_prompt,
            summary: latest(&summaries),
            entities: &ranked,
            history: &messages,
            new_message: &new,
            config: &config,
            protocol: endpoint.protocol,
        },
        &HeuristicEstimator,
    );
    let prompt_text: String = std::iter::once(assembly.prompt.system.clone())
        .chain(assembly.prompt.messages.iter().map(|m| m.content.clone()))
        .collect::<Vec<_>>()
        .join("\n");
    // A plain last-N window of the same token size.
    let est = HeuristicEstimator;
    let mut naive_tokens = est.estimate(&endpoint.system_prompt) + est.estimate(FINAL);
    let mut naive = vec![endpoint.system_prompt.clone(), FINAL.to_string()];
    for m in messages.iter().rev() {
        let t = est.estimate(&m.content);
        if naive_tokens + t > assembly.total_tokens {
            break;
        }
        naive_tokens += t;
        naive.push(m.content.clone());
    }
    if verbose {
        eprintln!(
            "[recall] final prompt ({} tokens):\n{prompt_text}",
            assembly.total_tokens
        );
    }
    let n = FACTS.len() as f64;
    eprintln!(
        "[recall] {} turns, {updates} updates in {} s, form {}, history dropped {}",
        turns.len(),
        started.elapsed().as_secs(),
        form.as_str(),
        assembly.dropped.len()
    );
    println!(
        "bench memory_update_parse_rate_real {:.2} ratio",
        parsed_ok as f64 / updates.max(1) as f64
    );
    println!(
        "bench memory_fact_recall_real {:.2} ratio",
        facts_in(&prompt_text) as f64 / n
    );
    println!(
        "bench naive_last_n_fact_recall {:.2} ratio",
        facts_in(&naive.join("\n")) as f64 / n
    );
}
