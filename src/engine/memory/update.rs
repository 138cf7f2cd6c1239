//! One conversation's memory update as a state machine, sans-IO like `engine::turn::Turn`: the
//! session reports what happened through `handle_*` and executes what [`Update::poll_action`] asks
//! (take the lock, load, ask the tab's scheduler, send, store in one transaction, say what changed),
//! deciding nothing. Every decision of a live update is here:
//! - whether one is due ([`due`]), or backing off after a failure ([`retry_allowed`]); a forced
//!   update ("Update memory now") skips both, and is itself skipped when another summary landed
//!   while it waited for the conversation's lock (another tab just made the update);
//! - refusing at once when this conversation's update already runs here (a live one then has the
//!   scheduler run this one after it), and no endpoint;
//! - waiting for a chat turn on its server (the scheduler's `Admit::Wait`: deferred, not failed);
//! - the request: built on the one summary read ([`build_update_request`]), as a continuation of the
//!   chat prompt the server last read when it is one (`engine::prefix::update_continues`), in the
//!   form remembered for the endpoint, once more in the next form when the server refuses it;
//! - a stream that ended before anything arrived is asked why once ([`Action::Probe`]): a server
//!   refusing the prompt as longer than its context says so only to a request not streamed;
//! - the reply: cut short while a chat turn came, it is judged unusable and the update deferred
//!   ([`judge`]); otherwise read, grounded and applied ([`apply_update`]); a failure on an idle
//!   server recorded with its back-off ([`MemoryFailure::following`]), said once (a repeat is
//!   quiet);
//! - what is written: one transaction ([`Write`]): the new memory (only if the latest summary is
//!   still the one the update was built on), the failure cleared or recorded, the form the server
//!   took;
//! - running again at once while memory is behind and the server idle, at most
//!   [`MAX_UPDATES_IN_A_ROW`] in a row.
//!
//! [`Update::chunk`] runs one given request the same way (a chunk of a memory build,
//! `engine::memory::catchup`): no lock, load or scheduler of its own. Must not import anything
//! outside `crate::engine`.

use super::catchup::settle;
use super::parse::Proposals;
use super::prompt::ReadMessage;
use super::{
    apply_update, build_update_request, due, judge, next_form, refused_http, refused_stream,
    retry_allowed, start_form, summary_max_chars, Admit, DueInput, Graph, MemoryFailure,
    MemoryForm, ReplyCollector, UpdateEnd, UpdateLimits, UpdateRequest, Verdict,
};
use crate::engine::decode::{StreamEvent, CODE_CUT_OFF};
use crate::engine::failure::{self, Failure};
use crate::engine::model::{
    Conversation, ConversationSummary, EndpointProfile, EntityNode, EntityScope, MemoryConfig,
    Message, Millis, Prompt, Protocol, WireMessage,
};
use crate::engine::prefix::{update_continues, LastPrompt};
use crate::engine::request::{self, HttpRequest, RequestOptions};
use crate::engine::slots::SlotUse;
use std::collections::VecDeque;

/// Most updates of one conversation run one after the other (each lands before the next starts).
pub const MAX_UPDATES_IN_A_ROW: usize = 8;

/// Most messages looked at when deciding whether an update is due (when there is no summary yet).
pub const DUE_WINDOW: usize = 400;

/// Whether this conversation's memory is being updated in this tab already.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Here {
    Free,
    /// A live update runs (the scheduler knows it).
    Live,
    /// A memory build runs.
    Building,
}

/// What the store returned for [`Action::Load`], with the settings in force.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub conversation: Conversation,
    /// The conversation's memory config.
    pub config: MemoryConfig,
    /// The endpoint its memory updates go to.
    pub endpoint: EndpointProfile,
    /// Whether a chat endpoint is set at all.
    pub has_endpoint: bool,
    /// The latest summary, read once.
    pub previous: Option<ConversationSummary>,
    /// The messages after it (or the last [`DUE_WINDOW`] without one), on the branch on screen.
    pub messages: Vec<Message>,
    /// The last failed update, if any.
    pub failure: Option<MemoryFailure>,
    /// The chat prompt the server last read for the conversation (the session's cache).
    pub last_prompt: Option<LastPrompt>,
    /// The llama.cpp slot memory requests use on the endpoint's server, when known.
    pub slot: Option<SlotUse>,
}

/// What the store returned for [`Action::LoadGraph`].
#[derive(Debug, Clone, Default)]
pub struct LoadedGraph {
    /// The conversation's entities.
    pub existing: Vec<EntityNode>,
    /// The form remembered for the endpoint.
    pub remembered: Option<MemoryForm>,
    /// The last failed update, if any.
    pub failure: Option<MemoryFailure>,
}

/// A new memory to store, only if the conversation's latest summary is still `expected` (its
/// version); then the failure is cleared with it.
#[derive(Debug, Clone, PartialEq)]
pub struct NewMemory {
    pub expected: Option<u32>,
    pub summary: Option<ConversationSummary>,
    pub scope: EntityScope,
    pub nodes: Vec<EntityNode>,
}

/// One store transaction's worth.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Write {
    pub memory: Option<NewMemory>,
    /// A failure to record (the previous memory untouched).
    pub failure: Option<MemoryFailure>,
    /// The form the endpoint (by key) took, to remember.
    pub form: Option<(String, MemoryForm)>,
}

/// How the update ended, for the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finish {
    /// The memory moved on.
    Landed,
    /// Nothing was written: not due, backing off, skipped, stopped, or another update landed first.
    Nothing,
    /// This conversation's memory is being updated here already.
    Busy,
    /// It gave way to a chat turn on its server; the scheduler runs it again after the turn.
    Deferred,
    NoEndpoint,
    /// The request could not be built.
    Invalid(String),
    /// It failed on an idle server and was recorded; `repeated`: the same failure as before (shown
    /// in the memory pane only, not again as a banner).
    Failed {
        reason: String,
        repeated: bool,
    },
    /// The store failed (the session holds the error).
    Broken,
}

/// What the session is asked to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Say whether this conversation's memory is being updated here ([`Update::handle_here`]).
    Check,
    /// An update of this conversation runs here: have the scheduler run this one after it
    /// (`Scheduler::handle_update_wanted`, whose answer is then `Wait`).
    WaitForRunning,
    /// Read the latest summary's version ([`Update::handle_version`]): what a forced update waits
    /// for the lock against.
    ReadVersion,
    /// Take the conversation's memory lock, letting go of one held ([`Update::handle_locked`]).
    Lock,
    /// Load [`Loaded`] (messages: after the summary, or the last `window`).
    Load { window: usize },
    /// Ask the tab's scheduler (`handle_update_wanted`) and answer [`Update::handle_admit`].
    Admit,
    /// It runs: the views say so, and a chat turn on its server may stop it.
    Started,
    /// Load [`LoadedGraph`], the form by the memory endpoint's key ([`Update::handle_graph`]).
    LoadGraph { endpoint_key: String },
    /// Send this request not streamed and answer [`Update::handle_probe`] with the server's
    /// refusal, if it refuses it (why a stream ended before anything arrived).
    Probe { request: HttpRequest },
    /// Send this request; feed its events ([`Update::handle_event`]) or failure.
    Send {
        request: HttpRequest,
        protocol: Protocol,
        form: MemoryForm,
        /// The endpoint's base URL (what a failure names).
        base_url: String,
    },
    /// Write in one transaction; answer [`Update::handle_stored`] (whether the memory was stored).
    Store(Write),
    /// The conversation's memory (or its failure) changed.
    Changed,
    /// Take in the facts about the user: those the model proposed for the span `read`, then (when
    /// `span` is there) what the user said in it.
    Facts {
        read: Vec<ReadMessage>,
        proposals: Proposals,
        span: Option<Vec<Message>>,
        config: MemoryConfig,
    },
    /// It stopped running: tell the scheduler how it ended, then [`Update::handle_ended`].
    Ended(UpdateEnd),
    /// Over; nothing follows.
    Done(Finish),
}

/// Where the machine is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Checking,
    Version,
    Locking,
    Loading,
    Admitting,
    Graph,
    Sending,
    Storing,
    Ending,
    Done,
}

/// The request in flight and what applying its reply needs.
struct Exchange {
    conversation_id: String,
    endpoint: EndpointProfile,
    req: UpdateRequest,
    /// The chat prompt the server last read and its reply, when the update continues them.
    after: Option<(Prompt, WireMessage)>,
    previous: Option<ConversationSummary>,
    existing: Vec<EntityNode>,
    message_count: u64,
    /// The highest seq the update looked at (a failure's back-off counts turns after it).
    seen_seq: u64,
    config: MemoryConfig,
    slot: Option<SlotUse>,
    remembered: Option<MemoryForm>,
    before: Option<MemoryFailure>,
    form: MemoryForm,
    retried: bool,
    opened: bool,
    /// Asking why a stream ended before anything arrived ([`Update::probe`]).
    why: Why,
    collector: ReplyCollector,
    /// Taken in once stored: the span the request showed and the proposals.
    facts: Option<(Vec<ReadMessage>, Proposals)>,
}

/// What asking why a stream ended before anything arrived needs.
#[derive(Default)]
struct Why {
    /// Whether any event of the reply arrived (a stream that ends before one may be a refusal).
    heard: bool,
    /// What the request in flight was built from (openai-chat): what a probe sends again.
    sent: Option<(Prompt, RequestOptions)>,
    /// The failure a probe is out for; an update probes at most once.
    probing: Option<Failure>,
    probed: bool,
}

/// How one request ended, before it is written.
enum Reply {
    Text { text: String, cut: bool },
    Failed(Failure, String),
}

/// What one chunk of a memory build runs: a request built by the caller.
pub struct Chunk {
    pub conversation_id: String,
    pub endpoint: EndpointProfile,
    pub req: UpdateRequest,
    pub previous: Option<ConversationSummary>,
    pub message_count: u64,
    pub seen_seq: u64,
    pub config: MemoryConfig,
    pub slot: Option<SlotUse>,
    pub graph: LoadedGraph,
}

/// One conversation's memory update (live), or one chunk of a build.
pub struct Update {
    conversation_id: String,
    forced: bool,
    overflow: bool,
    /// A live update (scheduler, lock, facts of the span); false for a build's chunk.
    live: bool,
    phase: Phase,
    /// The summary version seen before the lock (forced).
    seen: Option<Option<u32>>,
    loaded: Option<Loaded>,
    exchange: Option<Exchange>,
    contended: bool,
    stopped: bool,
    /// Updates run so far in this row.
    runs: usize,
    result: Finish,
    now: Millis,
    new_id: Box<dyn FnMut() -> String>,
    actions: VecDeque<Action>,
}

impl Update {
    /// A live update of `conversation_id` after a turn (`overflow`: the history no longer fits its
    /// budget), or forced by the user. `new_id` makes the ids of new entities.
    pub fn new(
        conversation_id: &str,
        overflow: bool,
        forced: bool,
        new_id: Box<dyn FnMut() -> String>,
    ) -> Update {
        let mut u = Update {
            conversation_id: conversation_id.to_string(),
            forced,
            overflow,
            live: true,
            phase: Phase::Checking,
            seen: None,
            loaded: None,
            exchange: None,
            contended: false,
            stopped: false,
            runs: 0,
            result: Finish::Nothing,
            now: 0,
            new_id,
            actions: VecDeque::new(),
        };
        u.actions.push_back(Action::Check);
        u
    }

    /// One chunk of a memory build: sends `chunk.req` at once (nothing is due-checked, nothing
    /// waits: the build holds the lock, and is the user's).
    pub fn chunk(chunk: Chunk, now: Millis, new_id: Box<dyn FnMut() -> String>) -> Update {
        let mut u = Update::new(&chunk.conversation_id, false, true, new_id);
        u.actions.clear();
        u.live = false;
        u.now = now;
        let form = start_form(chunk.endpoint.protocol, chunk.graph.remembered);
        u.exchange = Some(Exchange {
            conversation_id: chunk.conversation_id,
            config: chunk.config,
            endpoint: chunk.endpoint,
            req: chunk.req,
            after: None,
            previous: chunk.previous,
            existing: chunk.graph.existing,
            message_count: chunk.message_count,
            seen_seq: chunk.seen_seq,
            slot: chunk.slot,
            remembered: chunk.graph.remembered,
            before: chunk.graph.failure,
            form,
            retried: false,
            why: Why::default(),
            opened: false,
            collector: ReplyCollector::new(form),
            facts: None,
        });
        u.send();
        u
    }

    /// The next thing to do, oldest first.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// Whether the request in flight still wants its events.
    pub fn is_sending(&self) -> bool {
        self.phase == Phase::Sending
    }

    /// The answer to [`Action::Check`].
    pub fn handle_here(&mut self, here: Here) {
        if self.phase != Phase::Checking {
            return;
        }
        match here {
            Here::Free if self.forced => self.go(Phase::Version, Action::ReadVersion),
            Here::Free => self.go(Phase::Locking, Action::Lock),
            Here::Live => {
                self.actions.push_back(Action::WaitForRunning);
                self.done(Finish::Busy);
            }
            Here::Building => self.done(Finish::Busy),
        }
    }

    /// The answer to [`Action::ReadVersion`].
    pub fn handle_version(&mut self, version: Option<u32>) {
        if self.phase == Phase::Version {
            self.seen = Some(version);
            self.go(Phase::Locking, Action::Lock);
        }
    }

    /// The lock is held.
    pub fn handle_locked(&mut self) {
        if self.phase == Phase::Locking {
            self.go(Phase::Loading, Action::Load { window: DUE_WINDOW });
        }
    }

    /// The answer to [`Action::Load`]: decides whether the update runs.
    pub fn handle_loaded(&mut self, loaded: Loaded, now: Millis) {
        if self.phase != Phase::Loading {
            return;
        }
        self.now = now;
        match self.runs_now(&loaded, now) {
            Some(finish) => self.done(finish),
            None => {
                self.loaded = Some(loaded);
                self.go(Phase::Admitting, Action::Admit);
            }
        }
    }

    /// Why the loaded update does not run now, or `None` when it does.
    fn runs_now(&self, l: &Loaded, now: Millis) -> Option<Finish> {
        let version = l.previous.as_ref().map(|s| s.version);
        if self.forced {
            // Another summary landed while this one waited for the lock: that update was this one.
            return match self.seen {
                Some(seen) if seen != version => Some(Finish::Nothing),
                _ => (!l.has_endpoint).then_some(Finish::NoEndpoint),
            };
        }
        let decision = due(DueInput {
            messages: &l.messages,
            covers_up_to_seq: l.previous.as_ref().map(|s| s.covers_up_to_seq),
            every_pairs: l.config.summary_every_pairs,
            over_budget: self.overflow,
        });
        let key = l.endpoint.key();
        if !decision.is_due() || !retry_allowed(l.failure.as_ref(), &l.messages, &key, now) {
            return Some(Finish::Nothing);
        }
        (!l.has_endpoint).then_some(Finish::NoEndpoint)
    }

    /// The scheduler's answer to [`Action::Admit`].
    pub fn handle_admit(&mut self, admit: Admit) {
        if self.phase != Phase::Admitting {
            return;
        }
        match admit {
            Admit::Wait => self.done(Finish::Deferred),
            Admit::Start => {
                self.contended = false;
                self.stopped = false;
                let endpoint_key = self.loaded.as_ref().map(|l| l.endpoint.key());
                self.actions.push_back(Action::Started);
                self.go(
                    Phase::Graph,
                    Action::LoadGraph {
                        endpoint_key: endpoint_key.unwrap_or_default(),
                    },
                );
            }
        }
    }

    /// The answer to [`Action::LoadGraph`]: builds the request and sends it.
    pub fn handle_graph(&mut self, graph: LoadedGraph) {
        if self.phase != Phase::Graph {
            return;
        }
        let Some(l) = self.loaded.as_ref() else {
            return;
        };
        let limits = UpdateLimits::from_config(&l.config);
        let req = match build_update_request(
            l.previous.as_ref(),
            &l.messages,
            &graph.existing,
            &limits,
        ) {
            Ok(req) => req,
            Err(e) => return self.end(Finish::Invalid(e.to_string())),
        };
        let key = l.endpoint.key();
        let after = l.last_prompt.as_ref().and_then(|last| {
            let to = req.span.to_seq;
            let reply = update_continues(last, &key, &l.messages, to, l.config.max_message_chars)?;
            Some((last.prompt.clone(), reply))
        });
        let form = start_form(l.endpoint.protocol, graph.remembered);
        self.exchange = Some(Exchange {
            conversation_id: self.conversation_id.clone(),
            endpoint: l.endpoint.clone(),
            after,
            previous: l.previous.clone(),
            existing: graph.existing,
            message_count: l.conversation.message_count,
            seen_seq: l.messages.iter().map(|m| m.seq).max().unwrap_or(0),
            config: l.config.clone(),
            slot: l.slot,
            remembered: graph.remembered,
            before: graph.failure,
            form,
            retried: false,
            why: Why::default(),
            opened: false,
            collector: ReplyCollector::new(form),
            facts: None,
            req,
        });
        self.send();
    }

    /// Sends the request in its current form.
    fn send(&mut self) {
        let Some(x) = self.exchange.as_mut() else {
            return;
        };
        let prompt = match &x.after {
            Some((chat, reply)) => x.req.prompt_after(x.form, chat, reply),
            None => x.req.prompt_for(x.form),
        };
        let options = RequestOptions {
            slot: x.slot,
            ..x.req.request_options(x.form)
        };
        x.collector = ReplyCollector::new(x.form);
        x.opened = false;
        x.why.heard = false;
        self.phase = Phase::Sending;
        let built = request::build(&x.endpoint, &prompt, &options);
        x.why.sent = (x.endpoint.protocol == Protocol::OpenAiChat).then(|| (prompt, options));
        match built {
            Ok(request) => self.actions.push_back(Action::Send {
                request,
                protocol: x.endpoint.protocol,
                form: x.form,
                base_url: x.endpoint.base_url.clone(),
            }),
            Err(refused) => {
                self.replied(Reply::Failed(failure::key_refused(&refused), String::new()))
            }
        }
    }

    /// The server answered the request (a 2xx, its body to come): it took the form.
    pub fn handle_opened(&mut self) {
        if let Some(x) = self
            .exchange
            .as_mut()
            .filter(|_| self.phase == Phase::Sending)
        {
            x.opened = true;
        }
    }

    /// The request got no body: `failure`, and the HTTP status and body when there was a response
    /// (a refusal of the form is tried once more in the next form).
    pub fn handle_open_failed(&mut self, failure: Failure, http: Option<(u16, String)>) {
        let Some(x) = self
            .exchange
            .as_ref()
            .filter(|_| self.phase == Phase::Sending)
        else {
            return;
        };
        let refused = http
            .as_ref()
            .is_some_and(|(status, body)| refused_http(x.form, *status, body));
        let body = http.map(|(_, b)| b).unwrap_or_default();
        if refused {
            self.refused(failure, body);
        } else {
            self.replied(Reply::Failed(failure, body));
        }
    }

    /// One decoded event of the reply.
    pub fn handle_event(&mut self, event: StreamEvent) {
        let Some(x) = self
            .exchange
            .as_mut()
            .filter(|_| self.phase == Phase::Sending)
        else {
            return;
        };
        if !matches!(event, StreamEvent::Error(_)) {
            x.why.heard = true;
        }
        match x.collector.handle_event(event) {
            None => {}
            Some(Ok(text)) => {
                let cut = x.collector.was_cut();
                self.replied(Reply::Text { text, cut });
            }
            Some(Err(e)) if refused_stream(x.form, &e) => {
                self.refused(failure::from_stream_error(&e, false), e.message)
            }
            Some(Err(e))
                if e.code.as_deref() == Some(CODE_CUT_OFF)
                    && !x.why.heard
                    && !x.why.probed
                    && !self.stopped =>
            {
                let first = failure::from_stream_error(&e, false);
                self.probe(first);
            }
            Some(Err(e)) => {
                let partial = x.collector.partial();
                self.replied(Reply::Failed(
                    failure::from_stream_error(&e, false),
                    partial,
                ));
            }
        }
    }

    /// The stream ended before anything arrived (`first`): llama-cpp-python answers a streamed
    /// prompt longer than its context with an empty 200 and says why only to its log, so the same
    /// request goes once more, not streamed and for one token ([`Action::Probe`], openai-chat, as a
    /// chat turn does in `engine::turn`): its refusal says how long the context is.
    fn probe(&mut self, first: Failure) {
        let Some(x) = self.exchange.as_mut() else {
            return;
        };
        let Some((prompt, options)) = x.why.sent.clone() else {
            let partial = x.collector.partial();
            return self.replied(Reply::Failed(first, partial));
        };
        x.why.probed = true;
        let options = RequestOptions {
            stream: false,
            max_tokens: Some(1),
            ..options
        };
        match request::build(&x.endpoint, &prompt, &options) {
            Ok(request) => {
                x.why.probing = Some(first);
                self.actions.push_back(Action::Probe { request });
            }
            Err(_) => self.replied(Reply::Failed(first, String::new())),
        }
    }

    /// What the probe ([`Action::Probe`]) got: the server's refusal, with its status and body
    /// (read as a refusal of the request would have been: a refused form goes once more in the
    /// next form), or none (the first failure stands).
    pub fn handle_probe(&mut self, refusal: Option<(Failure, u16, String)>) {
        let Some(first) = self
            .exchange
            .as_mut()
            .filter(|_| self.phase == Phase::Sending)
            .and_then(|x| x.why.probing.take())
        else {
            return;
        };
        match refusal {
            Some((failure, status, body)) => self.handle_open_failed(failure, Some((status, body))),
            None => self.replied(Reply::Failed(first, String::new())),
        }
    }

    /// The request failed on the wire (timed out, dropped, refused).
    pub fn handle_failure(&mut self, failure: Failure) {
        if let Some(x) = self
            .exchange
            .as_ref()
            .filter(|_| self.phase == Phase::Sending)
        {
            let partial = x.collector.partial();
            self.replied(Reply::Failed(failure, partial));
        }
    }

    /// A chat turn to the update's server started while it ran.
    pub fn handle_contended(&mut self) {
        self.contended = true;
    }

    /// The request was stopped (a chat turn came, or the user cancelled): nothing of its reply is
    /// written; the form is remembered when the server had answered in it, or refused the one
    /// before it (a server that refuses a form refuses it every time: the next update starts with
    /// the form after it even when chat turns keep stopping the update before any answer).
    pub fn handle_stopped(&mut self) {
        self.stopped = true;
        let Some(x) = self
            .exchange
            .as_ref()
            .filter(|_| self.phase == Phase::Sending)
        else {
            return;
        };
        let write = Write {
            form: x.remember(x.opened || x.retried),
            ..Write::default()
        };
        self.result = Finish::Nothing;
        self.store(write);
    }

    /// The server refused the request's form: once more in the next form, if any, else a failure.
    fn refused(&mut self, failure: Failure, body: String) {
        let Some(x) = self.exchange.as_mut() else {
            return;
        };
        match next_form(x.endpoint.protocol, x.form).filter(|_| !x.retried && !self.stopped) {
            Some(next) => {
                x.form = next;
                x.retried = true;
                self.send();
            }
            None => {
                self.fail(
                    Write::default(),
                    failure.text(),
                    body,
                    UpdateEnd::Failed(failure.kind),
                );
            }
        }
    }

    /// The request ended with `reply`: read and applied, or a failure (judged against contention).
    fn replied(&mut self, reply: Reply) {
        let Some(x) = self.exchange.as_mut() else {
            return;
        };
        // Not refused: the server took the form (whatever else went wrong).
        let write = Write {
            form: x.remember(true),
            ..Write::default()
        };
        let text = match reply {
            Reply::Failed(f, body) => {
                return self.fail(write, f.text(), body, UpdateEnd::Failed(f.kind))
            }
            // A reply cut short while a chat turn came is not the model's whole answer: not read.
            Reply::Text { cut: true, .. } if self.contended => {
                return self.fail(write, String::new(), String::new(), UpdateEnd::Unusable)
            }
            Reply::Text { text, .. } => text,
        };
        let mut parsed = match x.req.read_reply(&text) {
            Ok(p) => p,
            Err(e) => {
                let reason = format!("The memory reply could not be used: {e}.");
                return self.fail(write, reason, text, UpdateEnd::Unusable);
            }
        };
        settle(&mut parsed);
        let scope = EntityScope::Conversation(x.conversation_id.clone());
        let mut graph = Graph::new(std::mem::take(&mut x.existing));
        let applied = apply_update(
            &parsed,
            x.previous.as_ref(),
            &x.conversation_id,
            &x.req.span,
            x.message_count,
            &mut graph,
            scope.clone(),
            self.now,
            summary_max_chars(&x.config),
            &mut self.new_id,
        );
        x.facts = Some((x.req.read.clone(), parsed.user_facts));
        let memory = NewMemory {
            expected: x.previous.as_ref().map(|s| s.version),
            summary: applied.summary,
            scope,
            nodes: graph.nodes().to_vec(),
        };
        self.result = Finish::Landed;
        self.store(Write {
            memory: Some(memory),
            ..write
        });
    }

    /// A request that did not give a usable reply: deferred when a chat turn came (nothing recorded),
    /// else its failure recorded.
    fn fail(&mut self, mut write: Write, reason: String, raw: String, end: UpdateEnd) {
        let Some(x) = self.exchange.as_ref() else {
            return;
        };
        if judge(&end, self.contended) == Verdict::Deferred {
            self.result = Finish::Deferred;
            return self.store(write);
        }
        let key = x.endpoint.key();
        let failure = MemoryFailure::new(self.now, reason.clone(), &raw, x.form).following(
            x.before.as_ref(),
            x.seen_seq,
            &key,
        );
        let repeated = failure.repeats(x.before.as_ref());
        write.failure = Some(failure);
        self.result = Finish::Failed { reason, repeated };
        self.store(write);
    }

    /// Asks for `write`, or goes on at once when there is nothing to write.
    fn store(&mut self, write: Write) {
        if write == Write::default() {
            return self.stored(false);
        }
        self.go(Phase::Storing, Action::Store(write));
    }

    /// The answer to [`Action::Store`]: whether the new memory was stored (false: another update
    /// landed first, or there was none).
    pub fn handle_stored(&mut self, stored: bool) {
        if self.phase == Phase::Storing {
            self.stored(stored);
        }
    }

    fn stored(&mut self, stored: bool) {
        match std::mem::replace(&mut self.result, Finish::Nothing) {
            Finish::Landed if stored => {
                self.actions.push_back(Action::Changed);
                let x = self.exchange.as_mut();
                if let Some((x, (read, proposals))) =
                    x.and_then(|x| Some((x.config.clone(), x.facts.take()?)))
                {
                    let span = self.loaded.as_ref().map(|l| l.messages.clone());
                    self.actions.push_back(Action::Facts {
                        read,
                        proposals,
                        span: span.filter(|_| self.live),
                        config: x,
                    });
                }
                self.end(Finish::Landed);
            }
            Finish::Landed => self.end(Finish::Nothing),
            f @ Finish::Failed { .. } => {
                self.actions.push_back(Action::Changed);
                self.end(f);
            }
            other => self.end(other),
        }
    }

    /// The store (or the lock) failed: the update ends, having written nothing more.
    pub fn handle_broken(&mut self) {
        if self.phase != Phase::Done {
            self.end(Finish::Broken);
        }
    }

    /// An update that ran (or a chunk) ends as `finish`: a live one tells the scheduler first.
    fn end(&mut self, finish: Finish) {
        self.exchange = None;
        let running = matches!(self.phase, Phase::Graph | Phase::Sending | Phase::Storing);
        if !self.live || !running {
            return self.done(finish);
        }
        let end = match &finish {
            Finish::Landed => UpdateEnd::Landed,
            Finish::Nothing => UpdateEnd::Stopped,
            Finish::Deferred => UpdateEnd::Unusable,
            _ => UpdateEnd::Broken,
        };
        self.result = finish;
        self.go(Phase::Ending, Action::Ended(end));
    }

    /// The scheduler heard how the update ended; `idle`: no chat turn of this tab is in flight on
    /// its server. A landed update runs again at once while the server is idle (memory may still be
    /// behind: a history that outgrew one update's budget, or updates that gave way to turns).
    pub fn handle_ended(&mut self, idle: bool) {
        if self.phase != Phase::Ending {
            return;
        }
        self.runs += 1;
        let finish = std::mem::replace(&mut self.result, Finish::Nothing);
        if finish == Finish::Landed && idle && self.runs < MAX_UPDATES_IN_A_ROW {
            self.forced = false;
            self.overflow = false;
            self.loaded = None;
            self.seen = None;
            self.go(Phase::Checking, Action::Check);
        } else {
            self.done(finish);
        }
    }

    fn go(&mut self, phase: Phase, action: Action) {
        self.phase = phase;
        self.actions.push_back(action);
    }

    fn done(&mut self, finish: Finish) {
        self.go(Phase::Done, Action::Done(finish));
    }
}

impl Exchange {
    /// The form to remember when the server `taken` it (it did not refuse it; a stopped request
    /// only once it answered in it): the next update starts there, unless it is remembered already.
    fn remember(&self, taken: bool) -> Option<(String, MemoryForm)> {
        (taken && self.remembered != Some(self.form)).then(|| (self.endpoint.key(), self.form))
    }
}
