//! What the benches on the real model share (`benches/memory_recall.rs`, `benches/memory_eval.rs`,
//! each with `mod common;`): the bench's own HTTP client (HTTP/1.0 over a loopback socket, so the
//! server frames the stream by closing the connection), one memory update through the engine
//! ([`ask`]: `request::build`, the protocol's decoder, `ReplyCollector`, a refusal retried in the
//! next form), a chat turn ([`chat`]), a conversation's memory as the app keeps it ([`Memory`]:
//! `due`, `build_update_request`, `read_reply` (parse and ground), `apply_update`, then
//! `rank_for_prompt` and `assemble` for a prompt), the conversation driver with every update waited
//! for ([`converse`]), and the check of a value carried as current ([`carried_as_current`]).
//! Every decision is the app's own engine code; only the sockets and the clock are the bench's.
#![allow(dead_code)]

pub mod reuse;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use memoire::engine::assemble::{assemble, Assembly, AssemblyInput};
use memoire::engine::decode::{decoder_for, StreamEvent};
use memoire::engine::failure;
use memoire::engine::memory::*;
use memoire::engine::model::*;
use memoire::engine::request::{self, HttpRequest};
use memoire::engine::tokens::HeuristicEstimator;

/// A message of conversation `conversation_id` (`id`: its id), written at `at`.
pub fn message(
    id: String,
    conversation_id: &str,
    seq: u64,
    role: Role,
    content: &str,
    at: Millis,
) -> Message {
    Message {
        id,
        conversation_id: conversation_id.into(),
        seq,
        role,
        content: content.into(),
        status: MessageStatus::Complete,
        created_at: at,
        meta: MessageMeta::default(),
    }
}

/// The endpoint of the real model (openai-chat at `url`).
pub fn endpoint(url: &str) -> EndpointProfile {
    EndpointProfile {
        id: "bench".into(),
        base_url: url.into(),
        protocol: Protocol::OpenAiChat,
        model: "smollm2-135m".into(),
        api_key: None,
        key_origin: String::new(),
        system_prompt: "You are a helpful assistant.".into(),
        no_user_memory: false,
    }
}

/// Where a running memory request's socket is kept, so that a chat turn can stop it.
pub type Abort = Arc<Mutex<Option<TcpStream>>>;

/// What one HTTP exchange gave: the status and the body. With `abort`, the socket is kept there while
/// the request runs (shutting it down ends the exchange early).
pub fn send(req: &HttpRequest, abort: Option<&Abort>) -> Result<(u16, Vec<u8>), String> {
    let rest = req.url.strip_prefix("http://").ok_or("only http:// URLs")?;
    let (host, path) = rest.split_once('/').ok_or("no path")?;
    let mut stream = TcpStream::connect(host).map_err(|e| format!("connect {host}: {e}"))?;
    stream.set_read_timeout(Some(Duration::from_secs(600))).ok();
    if let Some(slot) = abort {
        *slot.lock().unwrap() = stream.try_clone().ok();
    }
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
    let read = stream.read_to_end(&mut raw);
    if let Some(slot) = abort {
        slot.lock().unwrap().take();
    }
    read.map_err(|e| e.to_string())?;
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

/// How one memory update's request ended: the reply text and whether the stream ended without a
/// finish reason, or why there is none (with how it ended, for `schedule::judge`).
pub type Asked = Result<(String, bool), (String, UpdateEnd)>;

/// One memory update through the engine (see [`Asked`]).
pub fn ask(
    endpoint: &EndpointProfile,
    req: &UpdateRequest,
    form: &mut MemoryForm,
    abort: Option<&Abort>,
) -> Asked {
    ask_after(endpoint, req, form, None, abort)
}

/// [`ask`], as a continuation of the chat prompt `after` and its reply when there is one
/// (`UpdateRequest::prompt_after`, as the app sends an update to the chat's own server).
pub fn ask_after(
    endpoint: &EndpointProfile,
    req: &UpdateRequest,
    form: &mut MemoryForm,
    after: Option<&(Prompt, WireMessage)>,
    abort: Option<&Abort>,
) -> Asked {
    let mut retried = false;
    loop {
        let prompt = match after {
            Some((chat, reply)) => req.prompt_after(*form, chat, reply),
            None => req.prompt_for(*form),
        };
        let http = request::build(endpoint, &prompt, &req.request_options(*form))
            .expect("the key may go there");
        let (status, body) = send(&http, abort)
            .map_err(|e| (e, UpdateEnd::Failed(failure::FailureKind::Network)))?;
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
            let kind = failure::classify_http(status, None, &text, false, 0).kind;
            return Err((format!("HTTP {status}: {text}"), UpdateEnd::Failed(kind)));
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
                return match done {
                    Ok(text) => Ok((text, collector.was_cut())),
                    Err(e) => Err((
                        e.message.clone(),
                        UpdateEnd::Failed(failure::from_stream_error(&e, false).kind),
                    )),
                };
            }
        }
        unreachable!("engine::decode ends every body with Done or Error");
    }
}

/// The text of a streamed reply's body, through the protocol's decoder.
pub fn reply_text(protocol: Protocol, body: &[u8]) -> String {
    let mut decoder = decoder_for(protocol);
    decoder.handle_bytes(body);
    decoder.handle_eof();
    let mut text = String::new();
    while let Some(ev) = decoder.poll_event() {
        if let StreamEvent::TextDelta(t) = ev {
            text.push_str(&t);
        }
    }
    text
}

/// A chat turn through the engine: the reply text (empty when the request failed).
pub fn chat(endpoint: &EndpointProfile, prompt: &Prompt) -> String {
    // Capped as the app caps a chat request (`request::chat_options`), at the default reply room.
    let options = request::chat_options(request::reply_cap(&MemoryConfig::default()), None);
    let http = request::build(endpoint, prompt, &options).expect("the key may go there");
    let Ok((status, body)) = send(&http, None) else {
        return String::new();
    };
    if status >= 400 {
        eprintln!("[recall] chat: HTTP {status}");
        return String::new();
    }
    reply_text(endpoint.protocol, &body)
}

/// A conversation's memory as the app keeps it: messages, summary versions, the graph.
pub struct Memory {
    pub config: MemoryConfig,
    pub conversation_id: String,
    /// Message ids are this followed by `m<seq>`.
    id_prefix: String,
    /// Message `seq` is written at `start + seq` minutes.
    start: Millis,
    pub messages: Vec<Message>,
    pub summaries: Vec<ConversationSummary>,
    pub graph: Graph,
    ids: u64,
    /// Summaries that landed (for the echo figure).
    pub landed: Vec<String>,
}

impl Memory {
    /// Conversation `c`, its messages `m1`, `m2`, … a minute apart from the epoch.
    pub fn new(config: MemoryConfig) -> Memory {
        Memory::conversation(config, "c", "", 0)
    }

    /// Conversation `id` whose messages (`<id_prefix>m1`, …) are written a minute apart from `start`.
    pub fn conversation(config: MemoryConfig, id: &str, id_prefix: &str, start: Millis) -> Memory {
        Memory {
            config,
            conversation_id: id.into(),
            id_prefix: id_prefix.into(),
            start,
            messages: Vec::new(),
            summaries: Vec::new(),
            graph: Graph::new(Vec::new()),
            ids: 0,
            landed: Vec::new(),
        }
    }

    /// When message `seq` is written.
    pub fn at(&self, seq: u64) -> Millis {
        self.start + seq as i64 * 60_000
    }

    /// The message the conversation's next one would be, written at `at`.
    pub fn next_message(&self, role: Role, content: &str, at: Millis) -> Message {
        let seq = self.messages.len() as u64 + 1;
        let id = format!("{}m{seq}", self.id_prefix);
        message(id, &self.conversation_id, seq, role, content, at)
    }

    pub fn push(&mut self, role: Role, content: &str) -> &Message {
        let at = self.at(self.messages.len() as u64 + 1);
        let m = self.next_message(role, content, at);
        self.messages.push(m);
        self.messages.last().unwrap()
    }

    pub fn covers(&self) -> Option<u64> {
        latest(&self.summaries).map(|s| s.covers_up_to_seq)
    }

    pub fn due(&self) -> bool {
        due(DueInput {
            messages: &self.messages,
            covers_up_to_seq: self.covers(),
            every_pairs: self.config.summary_every_pairs,
            over_budget: false,
        })
        .is_due()
    }

    /// The update request the app would send now (the update's own budget is the model's context).
    pub fn request(&self) -> Option<UpdateRequest> {
        build_update_request(
            latest(&self.summaries),
            &self.messages,
            self.graph.nodes(),
            &UpdateLimits::from_config(&MemoryConfig {
                context_tokens: 8192,
                ..self.config.clone()
            }),
        )
        .ok()
    }

    /// Parses, grounds and applies a reply to `req` (sent when the summary was `previous`). Returns
    /// whether it landed.
    pub fn apply(&mut self, req: &UpdateRequest, reply: &str) -> bool {
        let Ok(parsed) = req.read_reply(reply) else {
            return false;
        };
        let previous = latest(&self.summaries).cloned();
        // A reply to an older request (the summary moved on meanwhile) is not applied.
        if previous.as_ref().map(|s| s.covers_up_to_seq).unwrap_or(0) >= req.span.to_seq {
            return false;
        }
        let now = self.at(self.messages.len() as u64);
        let ids = &mut self.ids;
        let prefix = &self.id_prefix;
        let applied = apply_update(
            &parsed,
            previous.as_ref(),
            &self.conversation_id,
            &req.span,
            self.messages.len() as u64,
            &mut self.graph,
            EntityScope::Conversation(self.conversation_id.clone()),
            now,
            summary_max_chars(&self.config),
            || {
                *ids += 1;
                format!("{prefix}e{ids}")
            },
        );
        if let Some(s) = &applied.summary {
            self.landed.push(s.text.clone());
        }
        self.summaries.extend(applied.summary);
        true
    }

    /// The prompt the app would assemble for `text` as the next message, sent at `at`, with the
    /// facts about the user `user_facts` (all of them as stored, as the session passes them).
    pub fn prompt_at(
        &self,
        endpoint: &EndpointProfile,
        text: &str,
        user_facts: &[UserFact],
        at: Millis,
    ) -> (Assembly, Message) {
        let (new, ranked) = self.ranked_for(text, at);
        let assembly = assemble(
            &self.input(endpoint, &new, &ranked, user_facts),
            &HeuristicEstimator,
        );
        (assembly, new)
    }

    /// The prompt the app would send for `text` as the next message, a minute after the last one,
    /// held on `anchor` as the session holds a conversation's prompts (`engine::prefix`); the anchor
    /// the next turn holds to.
    pub fn prompt_held(
        &self,
        endpoint: &EndpointProfile,
        text: &str,
        anchor: Option<&memoire::engine::prefix::Anchor>,
    ) -> (Assembly, memoire::engine::prefix::Anchor) {
        let at = self.at(self.messages.len() as u64 + 1);
        let (new, ranked) = self.ranked_for(text, at);
        let input = self.input(endpoint, &new, &ranked, &[]);
        memoire::engine::prefix::assemble_held(&input, anchor, &HeuristicEstimator)
    }

    /// The next message `text`, written at `at`, and the entities ranked for a prompt with it.
    fn ranked_for(&self, text: &str, at: Millis) -> (Message, Vec<EntityNode>) {
        let new = self.next_message(Role::User, text, at);
        let recent: Vec<&str> = self
            .messages
            .iter()
            .rev()
            .take(self.config.recent_messages)
            .map(|m| m.content.as_str())
            .chain(std::iter::once(text))
            .collect();
        let ranked = rank_for_prompt(&self.graph, &recent, new.created_at)
            .into_iter()
            .cloned()
            .collect();
        (new, ranked)
    }

    /// What the session gives the assembly for `new` after this conversation.
    fn input<'a>(
        &'a self,
        endpoint: &'a EndpointProfile,
        new: &'a Message,
        ranked: &'a [EntityNode],
        user_facts: &'a [UserFact],
    ) -> AssemblyInput<'a> {
        AssemblyInput {
            system_prompt: &endpoint.system_prompt,
            summary: latest(&self.summaries),
            entities: ranked,
            history: &self.messages,
            new_message: new,
            config: &self.config,
            protocol: endpoint.protocol,
            user_facts,
            project: None,
            recall: &[],
        }
    }

    /// [`Memory::prompt_at`] a minute after the last message, without facts about the user.
    pub fn prompt_for(&self, endpoint: &EndpointProfile, text: &str) -> (Assembly, Message) {
        let at = self.at(self.messages.len() as u64 + 1);
        self.prompt_at(endpoint, text, &[], at)
    }
}

/// The whole prompt as text: the system text (the memory sections are in it), then every message.
pub fn prompt_text(assembly: &Assembly) -> String {
    std::iter::once(assembly.prompt.system.clone())
        .chain(assembly.prompt.messages.iter().map(|m| m.content.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The assistant's fixed reply of the runs with every update waited for.
pub const REPLY: &str = "That is a good question. In short, it depends on a few things, and the most \
important ones are the conditions around you, how much time you have, and what you want in the end. \
Start small, check the result, and adjust step by step; most people find that a steady routine works \
better than one big effort. If you want, I can go into more detail on any part of it.";

/// What [`converse`] reports.
pub enum Step<'a> {
    /// A user message was just stored (the app takes in what it says about the user now).
    Said(&'a Message),
    /// A memory update ended: its request, how it ended, whether it landed, how long it took and
    /// the form it was sent in.
    Update {
        req: &'a UpdateRequest,
        /// The messages the update covered, as it read them.
        span: &'a [Message],
        reply: &'a Asked,
        landed: bool,
        took: Duration,
        form: MemoryForm,
    },
}

/// A conversation with every memory update waited for: each of `turns` from the user, `reply` from
/// the assistant, then the update when `due` says so, sent and applied before the next turn.
pub fn converse(
    mem: &mut Memory,
    endpoint: &EndpointProfile,
    form: &mut MemoryForm,
    turns: &[&str],
    reply: &str,
    mut step: impl FnMut(Step<'_>),
) {
    for user in turns {
        step(Step::Said(mem.push(Role::User, user)));
        mem.push(Role::Assistant, reply);
        if !mem.due() {
            continue;
        }
        let req = mem.request().expect("messages to summarise");
        let t = Instant::now();
        let asked = ask(endpoint, &req, form, None);
        let landed = match &asked {
            Ok((text, _)) => mem.apply(&req, text),
            Err(_) => false,
        };
        let span: Vec<Message> = mem
            .messages
            .iter()
            .filter(|m| req.span.message_ids.contains(&m.id))
            .cloned()
            .collect();
        step(Step::Update {
            req: &req,
            span: &span,
            reply: &asked,
            landed,
            took: t.elapsed(),
            form: *form,
        });
    }
}

/// Words that mark a statement as no longer true, or as the end of what it names ("Sadly Biscuit
/// died in the spring" does not carry Biscuit as the user's current pet).
pub const PAST_MARKERS: [&str; 11] = [
    "until ",
    "no longer",
    "used to",
    "formerly",
    "previously",
    "before moving",
    "(past",
    "past:",
    " died",
    "passed away",
    " sold ",
];

/// Whether `prompt_memory` carries `value` as current: a sentence (or line) names it without marking
/// it as past, and without naming the `new` value (a sentence that names both tells the change: "I
/// sold the Fiat and now I drive a blue Toyota"). Sentences end at a full stop followed by a space
/// or the line's end, so a note such as `(said 2026-11-20; until 2026-11-24)` stays with its sentence.
pub fn carried_as_current(prompt_memory: &str, value: &str, new: &str) -> bool {
    let (value, new) = (value.to_lowercase(), new.to_lowercase());
    prompt_memory
        .split('\n')
        .flat_map(|line| line.split(". "))
        .map(str::to_lowercase)
        .filter(|s| s.contains(&value) && !s.contains(&new))
        .any(|s| !PAST_MARKERS.iter().any(|m| s.contains(m)))
}
