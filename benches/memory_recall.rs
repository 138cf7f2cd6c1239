//! Memory on a real model (`make bench` starts llama-cpp-python's server with SmolLM2-135M and
//! passes its URL in `MEMOIRE_LLAMA_URL`):
//! - `memory_update_parse_rate_real`: the fraction of memory updates that gave a summary or an entity;
//! - `memory_fact_recall_real`: the fraction of 10 facts, planted in the first half of a 22-turn
//!   conversation whose history cannot fit the budget, present in the last assembled prompt;
//! - `naive_last_n_fact_recall`: the same for a plain last-N window of the same token size;
//! - `memory_fact_recall_real_typing`: the same conversation at a user's pace, chat and memory on the
//!   one server: every reply is the model's own, the next message goes 1.5 s after each reply, and
//!   memory updates give way to chat turns as the app's do (`engine::memory::schedule`: a chat stops
//!   the update running on its server, which runs again after the turn);
//! - `memory_updates_lost_to_typing`: in that run, updates that failed, plus one if the memory does
//!   not cover the whole conversation once the server is idle after the last turn;
//! - `memory_changed_fact_current_real` / `memory_stale_fact_as_current_real`: a conversation that
//!   changes 4 facts (city, job, pet, car), every update waited for: the fraction of new values carried
//!   as current in the last prompt, and of old values carried as current by its memory (the summary
//!   and entity sections: a sentence naming the old value that does not mark it as past);
//! - `memory_instruction_echo_real`: summary sentences, in the last summary of every run, that repeat
//!   the update prompt's own instructions (most of their words are the instructions').
//!
//! The whole memory path is the app's own engine code: `due`, `build_update_request`, the form the
//! endpoint takes (`start_form`, `next_form` on a refusal), `request::build`, the protocol's stream
//! decoder, `ReplyCollector`, `parse_reply`, `UpdateRequest::ground`, `apply_update`, then `rank_for_prompt` and `assemble` for the
//! final prompt. Only the HTTP client is the bench's: HTTP/1.0 over a loopback socket, so the server
//! frames the stream by closing the connection. The client, the update, the conversation's memory and
//! the driver with every update waited for are `benches/common/mod.rs`, shared with `memory_eval`. `MEMOIRE_RECALL_VERBOSE=1` prints every reply;
//! `MEMOIRE_RECALL_ONLY=waiting|typing|changed` runs that run alone.

mod common;

use std::net::Shutdown;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{
    ask_after, carried_as_current, chat, converse, endpoint, prompt_text, Abort, Memory, Step,
    REPLY,
};
use memoire::engine::memory::schedule::Action;
use memoire::engine::memory::*;
use memoire::engine::model::*;
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

fn facts_in(text: &str) -> usize {
    let lower = text.to_lowercase();
    FACTS
        .iter()
        .filter(|(_, w)| lower.contains(&w.to_lowercase()))
        .count()
}

/// The memory config of the runs: an update every pair, a history that cannot fit 1,400 tokens.
fn config() -> MemoryConfig {
    MemoryConfig {
        recent_messages: 4,
        summary_every_pairs: 1,
        context_tokens: 1400,
        reply_reserve_tokens: 400,
        ..MemoryConfig::default()
    }
}

fn turns() -> Vec<&'static str> {
    FACTS
        .iter()
        .map(|(m, _)| *m)
        .chain(std::iter::once(
            "What is a good name for a small wooden boat?",
        ))
        .chain(FILLER.iter().copied())
        .collect()
}

/// The first run: canned replies, every update waited for. Prints the parse rate and both recalls.
fn run_waiting(endpoint: &EndpointProfile, verbose: bool) -> Vec<String> {
    let mut mem = Memory::new(config());
    let mut form = start_form(endpoint.protocol, None);
    let (mut updates, mut parsed_ok) = (0u32, 0u32);
    let turns = turns();
    let started = Instant::now();
    converse(&mut mem, endpoint, &mut form, &turns, REPLY, |step| {
        let Step::Update {
            reply,
            landed,
            took,
            form,
            ..
        } = step
        else {
            return;
        };
        updates += 1;
        if verbose {
            eprintln!(
                "[recall] update {updates} ({} ms, {}): {reply:?} -> landed {landed}",
                took.as_millis(),
                form.as_str()
            );
        }
        parsed_ok += landed as u32;
    });
    let (assembly, _) = mem.prompt_for(endpoint, FINAL);
    let text = prompt_text(&assembly);
    // A plain last-N window of the same token size.
    let est = HeuristicEstimator;
    let mut naive_tokens = est.estimate(&endpoint.system_prompt) + est.estimate(FINAL);
    let mut naive = vec![endpoint.system_prompt.clone(), FINAL.to_string()];
    for m in mem.messages.iter().rev() {
        let t = est.estimate(&m.content);
        if naive_tokens + t > assembly.total_tokens {
            break;
        }
        naive_tokens += t;
        naive.push(m.content.clone());
    }
    if verbose {
        eprintln!(
            "[recall] final prompt ({} tokens):\n{text}",
            assembly.total_tokens
        );
    }
    let n = FACTS.len() as f64;
    eprintln!(
        "[recall] waiting run: {} turns, {updates} updates in {} s, form {}, history dropped {}",
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
        facts_in(&text) as f64 / n
    );
    println!(
        "bench naive_last_n_fact_recall {:.2} ratio",
        facts_in(&naive.join("\n")) as f64 / n
    );
    mem.landed.last().cloned().into_iter().collect()
}

/// A running memory update of the typing run.
struct Running {
    req: UpdateRequest,
    abort: Abort,
    stopped: bool,
    done: mpsc::Receiver<(Result<(String, bool), (String, UpdateEnd)>, MemoryForm)>,
}

/// Pace of the typing run: the next message this long after each reply.
const TYPING_PAUSE: Duration = Duration::from_millis(1500);

/// The second run: the same conversation at a user's pace, one server for chat and memory, memory
/// scheduled by the app's own `Scheduler`. Prints the recall and the updates lost.
fn run_typing(endpoint: &EndpointProfile, verbose: bool) -> Vec<String> {
    let server = server_of(&endpoint.base_url);
    let mut mem = Memory::new(config());
    let mut sched = Scheduler::default();
    let mut form = start_form(endpoint.protocol, None);
    let mut running: Option<Running> = None;
    // The chat prompts are held as the session holds them, and an update continues the chat prompt
    // the server last read (`engine::prefix`): one server for chat and memory, as the app sends them.
    let mut anchor: Option<memoire::engine::prefix::Anchor> = None;
    let mut last: Option<memoire::engine::prefix::LastPrompt> = None;
    let (mut started_updates, mut deferred, mut failed, mut landed) = (0u32, 0u32, 0u32, 0u32);
    let t0 = Instant::now();

    // What the session does with the scheduler's actions and an update's end.
    #[allow(clippy::too_many_arguments)]
    fn start(
        endpoint: &EndpointProfile,
        mem: &Memory,
        last: Option<&memoire::engine::prefix::LastPrompt>,
        sched: &mut Scheduler,
        server: &str,
        form: MemoryForm,
        running: &mut Option<Running>,
        started: &mut u32,
    ) {
        if running.is_some() || !mem.due() {
            return;
        }
        if sched.handle_update_wanted("c", server) == Admit::Wait {
            return;
        }
        let Some(req) = mem.request() else {
            sched.handle_update_ended("c", &UpdateEnd::Broken);
            return;
        };
        let after = last.and_then(|l| {
            memoire::engine::prefix::update_continues(
                l,
                &endpoint.key(),
                &mem.messages,
                req.span.to_seq,
                mem.config.max_message_chars,
            )
            .map(|reply| (l.prompt.clone(), reply))
        });
        let abort: Abort = Arc::new(Mutex::new(None));
        let (tx, rx) = mpsc::channel();
        let (endpoint, r, a) = (endpoint.clone(), req.clone(), abort.clone());
        std::thread::spawn(move || {
            let mut form = form;
            let out = ask_after(&endpoint, &r, &mut form, after.as_ref(), Some(&a));
            tx.send((out, form)).ok();
        });
        *started += 1;
        *running = Some(Running {
            req,
            abort,
            stopped: false,
            done: rx,
        });
    }
    let follow = |sched: &mut Scheduler, running: &mut Option<Running>| -> bool {
        let mut start_now = false;
        while let Some(a) = sched.poll_action() {
            match a {
                Action::Stop { .. } => {
                    if let Some(r) = running.as_mut() {
                        r.stopped = true;
                        if let Some(s) = r.abort.lock().unwrap().as_ref() {
                            s.shutdown(Shutdown::Both).ok();
                        }
                    }
                }
                Action::Start { .. } => start_now = true,
            }
        }
        start_now
    };
    // Waits up to `wait` for the running update to end, and handles its end as the session does.
    let settle = |mem: &mut Memory,
                  sched: &mut Scheduler,
                  running: &mut Option<Running>,
                  form: &mut MemoryForm,
                  wait: Duration|
     -> Option<Verdict> {
        let r = running.as_ref()?;
        let (out, f) = r.done.recv_timeout(wait).ok()?;
        let r = running.take().unwrap();
        *form = f;
        let end = match &out {
            _ if r.stopped && !matches!(out, Ok((_, false))) => UpdateEnd::Stopped,
            Ok((_, true)) if sched.is_contended("c") => UpdateEnd::Unusable,
            Ok((text, _)) => {
                if mem.apply(&r.req, text) {
                    UpdateEnd::Landed
                } else {
                    UpdateEnd::Unusable
                }
            }
            Err((_, end)) => end.clone(),
        };
        let verdict = sched.handle_update_ended("c", &end);
        if verbose {
            eprintln!(
                "[typing] {:>5.1} s update ended {end:?} -> {verdict:?}: {out:?}",
                t0.elapsed().as_secs_f64()
            );
        }
        Some(verdict)
    };
    let mut count = |v: Option<Verdict>| match v {
        Some(Verdict::Landed) => landed += 1,
        Some(Verdict::Deferred) => deferred += 1,
        Some(Verdict::Failed) => failed += 1,
        _ => {}
    };

    let turns = turns();
    let mut final_text = String::new();
    for (i, user) in turns.iter().chain(std::iter::once(&FINAL)).enumerate() {
        // Before the turn: an update that ended meanwhile is handled.
        count(settle(
            &mut mem,
            &mut sched,
            &mut running,
            &mut form,
            Duration::ZERO,
        ));
        let (assembly, next) = mem.prompt_held(endpoint, user, anchor.as_ref());
        anchor = Some(next);
        if i == turns.len() {
            final_text = prompt_text(&assembly);
        }
        mem.push(Role::User, user);
        sched.handle_chat_started(&server);
        follow(&mut sched, &mut running);
        let t = Instant::now();
        let reply = chat(endpoint, &assembly.prompt);
        // The stopped update ends while the chat runs (the server cut it, or the socket was shut).
        count(settle(
            &mut mem,
            &mut sched,
            &mut running,
            &mut form,
            Duration::from_secs(5),
        ));
        sched.handle_chat_ended(&server);
        if verbose {
            eprintln!(
                "[typing] {:>5.1} s turn {} ({} ms, {} chars)",
                t0.elapsed().as_secs_f64(),
                i + 1,
                t.elapsed().as_millis(),
                reply.len()
            );
        }
        let reply_id = mem
            .push(
                Role::Assistant,
                if reply.trim().is_empty() {
                    "…"
                } else {
                    &reply
                },
            )
            .id
            .clone();
        last = Some(memoire::engine::prefix::LastPrompt {
            endpoint_key: endpoint.key(),
            prompt: assembly.prompt.clone(),
            tokens: assembly.total_tokens,
            reply_id,
        });
        follow(&mut sched, &mut running);
        start(
            endpoint,
            &mem,
            last.as_ref(),
            &mut sched,
            &server,
            form,
            &mut running,
            &mut started_updates,
        );
        if i == turns.len() {
            break;
        }
        // The user reads and types the next message.
        let until = Instant::now() + TYPING_PAUSE;
        while let Some(left) = until.checked_duration_since(Instant::now()) {
            let v = settle(&mut mem, &mut sched, &mut running, &mut form, left);
            if v.is_none() {
                break;
            }
            count(v);
            if follow(&mut sched, &mut running) {
                start(
                    endpoint,
                    &mem,
                    last.as_ref(),
                    &mut sched,
                    &server,
                    form,
                    &mut running,
                    &mut started_updates,
                );
            }
        }
    }
    // After the last turn the server is idle: the app's own update after it, waited for.
    let deadline = Instant::now() + Duration::from_secs(600);
    while Instant::now() < deadline {
        if running.is_none() {
            if follow(&mut sched, &mut running) || mem.due() {
                start(
                    endpoint,
                    &mem,
                    last.as_ref(),
                    &mut sched,
                    &server,
                    form,
                    &mut running,
                    &mut started_updates,
                );
            }
            if running.is_none() {
                break;
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let v = settle(&mut mem, &mut sched, &mut running, &mut form, left);
        if matches!(v, Some(Verdict::Failed)) {
            count(v);
            break;
        }
        count(v);
    }
    let uncovered = count_pairs(&mem.messages, mem.covers());
    let lost = failed + (uncovered > 0) as u32;
    if verbose {
        eprintln!("[typing] final prompt:\n{final_text}");
    }
    eprintln!(
        "[recall] typing run: {} turns in {} s; {started_updates} updates started: {landed} landed, \
         {deferred} deferred, {failed} failed; {uncovered} pairs uncovered at the end",
        turns.len() + 1,
        t0.elapsed().as_secs(),
    );
    println!(
        "bench memory_fact_recall_real_typing {:.2} ratio",
        facts_in(&final_text) as f64 / FACTS.len() as f64
    );
    println!("bench memory_updates_lost_to_typing {lost} count");
    mem.landed.last().cloned().into_iter().collect()
}

/// (what the user says first, its value; what they say later, the new value).
const CHANGES: [(&str, &str, &str, &str); 4] = [
    (
        "I live in Lisbon, near the river.",
        "Lisbon",
        "I moved to Oslo last month, so I live in Oslo now.",
        "Oslo",
    ),
    (
        "I work as a nurse at the children's hospital.",
        "nurse",
        "I changed careers: I am a pilot now.",
        "pilot",
    ),
    (
        "I have a dog called Biscuit.",
        "Biscuit",
        "Sadly Biscuit died in the spring. I have a cat called Pimento now.",
        "Pimento",
    ),
    (
        "I drive an old red Fiat.",
        "Fiat",
        "I sold the Fiat and now I drive a blue Toyota.",
        "Toyota",
    ),
];

/// The third run: facts that change, every update waited for (canned replies).
fn run_changed(endpoint: &EndpointProfile, verbose: bool) -> Vec<String> {
    let mut mem = Memory::new(config());
    let mut form = start_form(endpoint.protocol, None);
    let mut script: Vec<&str> = vec!["Hi! My name is Marta."];
    script.extend(CHANGES.iter().map(|c| c.0));
    script.extend(FILLER[..3].iter().copied());
    script.extend(CHANGES.iter().map(|c| c.2));
    script.extend(FILLER[3..5].iter().copied());
    converse(&mut mem, endpoint, &mut form, &script, REPLY, |step| {
        if let Step::Update { reply, landed, .. } = step {
            if verbose {
                let text = reply.as_ref().map(|r| r.0.as_str()).unwrap_or_default();
                eprintln!("[changed] update landed {landed}: {text}");
            }
        }
    });
    let (assembly, _) = mem.prompt_for(
        endpoint,
        "Remind me: where do I live, what is my job, which pet and which car do I have?",
    );
    let all = prompt_text(&assembly);
    // The memory part of the prompt: the system message (summary and entities are carried there) for
    // a messages-format prompt.
    let memory = assembly.prompt.system.clone();
    if verbose {
        eprintln!("[changed] final prompt:\n{all}");
    }
    let n = CHANGES.len() as f64;
    let current = CHANGES
        .iter()
        .filter(|c| all.to_lowercase().contains(&c.3.to_lowercase()))
        .count();
    let stale = CHANGES
        .iter()
        .filter(|c| carried_as_current(&memory, c.1, c.3))
        .count();
    println!(
        "bench memory_changed_fact_current_real {:.2} ratio",
        current as f64 / n
    );
    println!(
        "bench memory_stale_fact_as_current_real {:.2} ratio",
        stale as f64 / n
    );
    mem.landed.last().cloned().into_iter().collect()
}

/// Summary sentences that repeat the update prompt's own instructions: most of their words (at least
/// 4 of them, two thirds) are words of the instructions and of nothing the user said.
fn instruction_echoes(summary: &str, said: &str) -> usize {
    let words = |t: &str| -> Vec<String> {
        t.split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.len() > 2)
            .map(str::to_lowercase)
            .collect()
    };
    let instructions: std::collections::HashSet<String> = [
        memoire::engine::memory::prompt::system_instruction(),
        memoire::engine::memory::prompt::structured_instruction(),
        MEMORY_REQUEST_OPENING.to_string(),
    ]
    .iter()
    .flat_map(|t| words(t))
    .collect();
    let said: std::collections::HashSet<String> = words(said).into_iter().collect();
    summary
        .split(['.', '\n', '!', '?'])
        .filter(|s| {
            let w = words(s);
            let echoed = w
                .iter()
                .filter(|w| instructions.contains(*w) && !said.contains(*w))
                .count();
            w.len() >= 4 && echoed * 3 >= w.len() * 2
        })
        .count()
}

fn main() {
    let Ok(url) = std::env::var("MEMOIRE_LLAMA_URL") else {
        eprintln!("memory_recall: set MEMOIRE_LLAMA_URL (scripts/bench.sh starts the real server)");
        std::process::exit(2);
    };
    let verbose = std::env::var("MEMOIRE_RECALL_VERBOSE").is_ok();
    // MEMOIRE_RECALL_ONLY=waiting|typing|changed: that run alone (to look into one figure).
    let only = std::env::var("MEMOIRE_RECALL_ONLY").ok();
    let runs = |name: &str| only.as_deref().is_none_or(|o| o == name);
    let endpoint = endpoint(&url);
    let mut summaries = Vec::new();
    if runs("waiting") {
        summaries.extend(run_waiting(&endpoint, verbose));
    }
    if runs("typing") {
        summaries.extend(run_typing(&endpoint, verbose));
    }
    if runs("changed") {
        summaries.extend(run_changed(&endpoint, verbose));
    }
    let said: String = turns()
        .iter()
        .copied()
        .chain(CHANGES.iter().flat_map(|c| [c.0, c.2]))
        .chain([REPLY, FINAL])
        .collect::<Vec<_>>()
        .join(" ");
    let echoes: usize = summaries.iter().map(|s| instruction_echoes(s, &said)).sum();
    println!("bench memory_instruction_echo_real {echoes} count");
}
