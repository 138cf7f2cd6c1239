//! The turn state machine, sans-IO in the quinn-proto style: inputs go in through `handle_*`
//! (stream events, failures, stop, timer ticks, each with `now`), outputs come out of
//! [`Turn::poll_action`] and [`Turn::poll_timeout`]. A thin driver executes the actions (send a
//! request, cancel it, save the reply, store the remote handle) and decides nothing.
//!
//! It owns the resume-or-reinject decision: a stateful endpoint with a live handle of THIS
//! conversation, for THIS endpoint, covering everything up to the previous message, gets only the
//! new message (`Resumed`); otherwise the assembled context is sent (`Reinjected`), or, with nothing
//! before the new message, the turn is `Fresh`. When the endpoint says the session is gone while
//! resuming, the handle is marked dead and the turn is re-sent with the full context, never silently
//! as an empty session. It accumulates the reply and throttles its saves (see `coalesce`).
//!
//! A turn starts from the history the driver holds (the conversation record and its recent
//! messages, ascending, the new user message last: `engine::window::HistoryWindow` in the app) and
//! refuses an [`Assembly`] that was not built from it as it stands (`TurnError::StaleContext`), so
//! the context-loss bug of seed 004 (history kept in one place, the prompt built from another)
//! cannot happen silently. [`ReplySave::apply_to`] is the one mapping of a save onto the stored
//! reply message.
//!
//! It also owns what a failed turn is and what is done with one ([`failed_reply`], [`retry_plan`],
//! [`failed_turn`]): Retry sends the same question again and its reply takes the failed bubble's
//! place, and a new message typed after a failed turn takes the failed question's place, so neither
//! the branch on screen nor what is sent ever holds two of the user's messages in a row. A reply
//! that was stopped or cut off is never thrown away: Retry adds a reply after it.
//!
//! And what a reply cut by the reply cap is ([`capped_by`]: each protocol's own signal; the reply
//! is complete and marked `capped`, not failed) and how Continue asks for the rest
//! ([`Turn::continue_reply`], [`continuation_prompt`]): the same prompt, the reply so far as the
//! assistant's message, then (except for anthropic, where a trailing assistant message is a
//! prefill) a short instruction to go on; what comes is appended to the same reply.
//!
//! A streamed request whose body ended before anything arrived says nothing of why: llama-cpp-python
//! answers a streamed prompt longer than its context with `200` and an empty body (the refusal
//! goes to its log). Such a turn asks once more ([`Action::Probe`], openai-chat only): the same
//! request, not streamed and for one token of reply, whose refusal, if any, is the turn's failure
//! (so a context too small is learned: `engine::context_window`).
//!
//! A reply that asks for tools ends its `Turn` like any reply; the tool loop
//! (`engine::tools::ToolLoop`) takes the round's calls ([`TurnOutcome::round_calls`], each with an
//! id: one the model gave none gets `tools::call_id`'s; waiting, or interrupted when the request
//! did not end whole) and, once they are answered, the next round
//! is a new `Turn` on the same reply ([`Turn::tool_round`]): the whole prompt again (the calls and
//! results go in the request, `engine::request::build_with_tools`), what comes appended to the
//! reply, its earlier calls kept. Must not import anything outside `crate::engine`.

use crate::engine::assemble::{Assembly, SectionKind};
use crate::engine::attach;
use crate::engine::coalesce::SaveThrottle;
use crate::engine::decode::{StreamEvent, Timings, CODE_CUT_OFF};
use crate::engine::failure::{self, Failure, FailureKind};
use crate::engine::history::{build_prompt_with, render_new};
use crate::engine::model::{
    Conversation, EndpointProfile, GenerationStats, HistoryFormat, Message, MessageStatus, Millis,
    Prompt, Protocol, Reasoning, RemoteHandle, Role, ToolCall, ToolStatus, TurnPath, Usage,
    WireMessage,
};
use crate::engine::tools::call_id;
use std::collections::{BTreeMap, VecDeque};

/// The stream error code that means the remote session is gone (Responses API).
pub const SESSION_GONE_CODE: &str = "previous_response_not_found";

/// The user's turn a continuation ends with (not for anthropic): go on where the reply stopped.
pub const CONTINUE_INSTRUCTION: &str = "Your reply above was cut off by the length limit. Continue it exactly where it stopped, without repeating anything and without any preamble.";

/// Whether a reply that ended with `finish_reason` was cut by the reply cap, by `protocol`'s own
/// signal: openai-chat and ollama `length`, openai-responses `max_output_tokens` (the reason of
/// `response.incomplete`), anthropic `max_tokens`.
pub fn capped_by(protocol: Protocol, finish_reason: Option<&str>) -> bool {
    let signal = match protocol {
        Protocol::OpenAiChat | Protocol::Ollama => "length",
        Protocol::OpenAiResponses => "max_output_tokens",
        Protocol::Anthropic => "max_tokens",
    };
    finish_reason == Some(signal)
}

/// The prompt that asks for the rest of a capped reply: `prompt` (the one the reply answered), the
/// reply so far as the assistant's message, then [`CONTINUE_INSTRUCTION`] as the user's; for
/// anthropic the assistant's message is last (a prefill the API continues), its trailing
/// whitespace trimmed, which the API refuses in a final assistant message.
pub fn continuation_prompt(protocol: Protocol, prompt: &Prompt, written: &str) -> Prompt {
    let mut p = prompt.clone();
    let wire = |role, content: &str| WireMessage {
        role,
        content: content.to_string(),
        images: Vec::new(),
        tool_calls: Vec::new(),
    };
    if protocol == Protocol::Anthropic {
        p.messages.push(wire(Role::Assistant, written.trim_end()));
    } else {
        p.messages.push(wire(Role::Assistant, written));
        p.messages.push(wire(Role::User, CONTINUE_INSTRUCTION));
    }
    p
}

/// Why a stored handle can or cannot be resumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandleCheck {
    Usable,
    Missing,
    /// The endpoint said it is gone.
    Dead,
    /// It belongs to another endpoint (protocol, url or model changed).
    OtherEndpoint,
    /// It does not cover every message before the new one (e.g. a turn failed since).
    Stale,
    /// The endpoint cannot continue sessions at all.
    StatelessEndpoint,
}

/// Whether `handle` can continue this conversation on `endpoint`, given the seq of the last message
/// before the new one.
pub fn check_handle(
    handle: Option<&RemoteHandle>,
    endpoint: &EndpointProfile,
    previous_seq: Option<u64>,
) -> HandleCheck {
    if !endpoint.protocol.is_stateful() {
        return HandleCheck::StatelessEndpoint;
    }
    let Some(h) = handle else {
        return HandleCheck::Missing;
    };
    if h.dead {
        HandleCheck::Dead
    } else if h.endpoint_key != endpoint.key() {
        HandleCheck::OtherEndpoint
    } else if previous_seq.is_some_and(|p| h.covers_up_to_seq < p) {
        HandleCheck::Stale
    } else {
        HandleCheck::Usable
    }
}

/// The path a turn starts on.
pub fn decide_path(
    handle: Option<&RemoteHandle>,
    endpoint: &EndpointProfile,
    previous_seq: Option<u64>,
    has_prior_context: bool,
) -> TurnPath {
    if previous_seq.is_none() && !has_prior_context {
        return TurnPath::Fresh;
    }
    match check_handle(handle, endpoint, previous_seq) {
        HandleCheck::Usable => TurnPath::Resumed,
        _ => TurnPath::Reinjected,
    }
}

/// The path a turn on `assembly` starts on: the handle is checked against the last message before the
/// new one (`history_through_seq`), and a turn with no such message is `Fresh` unless the assembly
/// still carries earlier context (a summary or entities after a clear).
pub fn path_for(
    handle: Option<&RemoteHandle>,
    endpoint: &EndpointProfile,
    assembly: &Assembly,
) -> TurnPath {
    let has_prior_context = assembly.sections.iter().any(|sec| {
        matches!(
            sec.kind,
            SectionKind::Summary
                | SectionKind::Pending
                | SectionKind::Entities
                | SectionKind::History
        )
    });
    decide_path(
        handle,
        endpoint,
        assembly.history_through_seq,
        has_prior_context,
    )
}

/// A reply that failed before it said anything: shown as one failed bubble, never sent to the
/// model, and replaced by the reply Retry gets.
pub fn failed_reply(m: &Message) -> bool {
    m.role == Role::Assistant
        && m.status == MessageStatus::Error
        && m.content.trim().is_empty()
        && m.meta.tool_calls.is_empty()
        && !m.meta.deleted
}

/// What Retry does on the branch on screen (`branch`, ascending, its tail is enough).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPlan {
    /// The user message sent again.
    pub user_id: String,
    /// The failed reply the new one replaces (it goes: a tombstone), when the branch ends with one.
    pub replaces: Option<String>,
}

/// What Retry sends again: the last user message of `branch`; the failed reply that ends the branch,
/// if one does, is replaced. A reply that was stopped or cut off stays (the new one follows it).
/// `None`: no user message to send again.
pub fn retry_plan(branch: &[Message]) -> Option<RetryPlan> {
    let shown: Vec<&Message> = branch.iter().filter(|m| !m.meta.deleted).collect();
    let at = shown.iter().rposition(|m| m.role == Role::User)?;
    let replaces = shown
        .last()
        .filter(|m| at + 1 < shown.len() && failed_reply(m))
        .map(|m| m.id.clone());
    Some(RetryPlan {
        user_id: shown[at].id.clone(),
        replaces,
    })
}

/// The user message of a failed turn that ends `branch` (ascending): the last user message, when
/// nothing or only failed replies follow it. A new message takes its place (an alternative of it,
/// as an edit is), rather than following it as a second message of the user's in a row.
pub fn failed_turn(branch: &[Message]) -> Option<&Message> {
    let shown: Vec<&Message> = branch.iter().filter(|m| !m.meta.deleted).collect();
    let at = shown.iter().rposition(|m| m.role == Role::User)?;
    shown[at + 1..]
        .iter()
        .all(|m| failed_reply(m))
        .then_some(shown[at])
}

/// How a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnStatus {
    Complete,
    /// Stopped by the user or cut off mid-stream; the partial reply is kept.
    Interrupted,
    /// The request failed; any partial reply is kept.
    Error,
}

impl TurnStatus {
    pub fn message_status(self) -> MessageStatus {
        match self {
            TurnStatus::Complete => MessageStatus::Complete,
            TurnStatus::Interrupted => MessageStatus::Interrupted,
            TurnStatus::Error => MessageStatus::Error,
        }
    }
}

/// One save of the assistant reply (partial while streaming, then final).
#[derive(Debug, Clone, PartialEq)]
pub struct ReplySave {
    pub message_id: String,
    pub seq: u64,
    pub content: String,
    pub tool_calls: Vec<ToolCall>,
    pub status: MessageStatus,
    pub usage: Option<Usage>,
    pub path: TurnPath,
    pub error: Option<String>,
    pub is_final: bool,
    /// The reasoning so far, with when it started and (once the answer began) ended.
    pub reasoning: Option<Reasoning>,
    /// The generation figures, once the server reported its token count.
    pub stats: Option<GenerationStats>,
    /// Cut by the reply cap ([`capped_by`]).
    pub capped: bool,
}

impl ReplySave {
    /// The stored reply message after this save (its model, set when the reply began, is kept).
    pub fn apply_to(&self, reply: &mut Message) {
        reply.content = self.content.clone();
        reply.status = self.status;
        reply.meta.tool_calls = self.tool_calls.clone();
        reply.meta.usage = self.usage;
        reply.meta.error = self.error.clone();
        reply.meta.path = Some(self.path);
        reply.meta.reasoning = self.reasoning.clone();
        reply.meta.stats = self.stats;
        reply.meta.capped = self.capped;
    }
}

/// Estimated vs reported prompt tokens, for `Calibration::observe`. Only given for requests that
/// carried the full context (a resumed request's reported count includes server-side history).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CalibrationSample {
    pub estimated: u32,
    pub reported: u32,
}

/// The end of a turn.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnOutcome {
    pub status: TurnStatus,
    pub path: TurnPath,
    pub content: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Option<Usage>,
    pub failure: Option<Failure>,
    pub calibration: Option<CalibrationSample>,
    /// Requests sent (2 when a dead session forced a re-send).
    pub attempts: u32,
    /// The reply was cut by the reply cap (it is complete, and can be continued).
    pub capped: bool,
    /// What this request's reply said, apart from the rounds before it ([`Turn::tool_round`]).
    pub round_text: String,
    /// The tool calls this request's reply asked for, each with an id (for `tools::ToolLoop`).
    pub round_calls: Vec<ToolCall>,
}

/// What the driver must do.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Send this request. `previous_response_id` is set only when resuming.
    SendRequest {
        attempt: u32,
        path: TurnPath,
        prompt: Prompt,
        previous_response_id: Option<String>,
    },
    /// Send `prompt` as the last request went, but not streamed and for one token of reply, and
    /// report its refusal (or none) with [`Turn::handle_probe`]: the stream of the last request
    /// ended before anything arrived (module doc).
    Probe { prompt: Prompt },
    /// Abort the request in flight (user stop).
    CancelRequest,
    /// Write the reply message (same id every time: an update, never a new message).
    SaveReply(ReplySave),
    /// Replace the conversation's remote handle (`Some` with `dead: true` records a dead one).
    StoreHandle {
        conversation_id: String,
        handle: Option<RemoteHandle>,
    },
    /// The turn is over; nothing follows.
    Finished(TurnOutcome),
}

/// Why a turn could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TurnError {
    #[error("the new message {0} is not in this conversation's history: store it before sending")]
    NewMessageMissing(String),
    #[error("the new message must be a user message")]
    NotAUserMessage,
    #[error("the prompt was assembled for message {assembled}, not for {expected}")]
    WrongNewMessage { assembled: String, expected: String },
    #[error("the prompt was assembled from stale history (through seq {assembled:?}, history is at {actual:?}); assemble again")]
    StaleContext {
        assembled: Option<u64>,
        actual: Option<u64>,
    },
    #[error("the reply seq {0} must come after every message of the conversation")]
    BadReplySeq(u64),
}

/// Everything a turn starts from.
#[derive(Debug, Clone, Copy)]
pub struct TurnStart<'a> {
    /// The conversation as the driver holds it.
    pub conversation: &'a Conversation,
    /// Its recent messages, ascending by seq, the new user message among them.
    pub history: &'a [Message],
    pub endpoint: &'a EndpointProfile,
    pub new_message_id: &'a str,
    /// Assembled from `state` as it stands.
    pub assembly: &'a Assembly,
    /// Id and seq the reply message will have.
    pub reply_id: &'a str,
    pub reply_seq: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Streaming,
    Finished,
}

/// One turn: from sending the request to the saved reply.
#[derive(Debug, Clone)]
pub struct Turn {
    conversation_id: String,
    endpoint_key: String,
    protocol: Protocol,
    stateful: bool,
    path: TurnPath,
    /// The handle being resumed, if resuming.
    handle: Option<RemoteHandle>,
    full_prompt: Prompt,
    estimated_prompt_tokens: u32,
    reply_id: String,
    reply_seq: u64,
    text: String,
    reasoning: Option<Reasoning>,
    /// When the request in flight went out, and when its first and last pieces arrived.
    clock: PieceClock,
    timings: Option<Timings>,
    /// Prompt tokens the server said it read from its cache.
    cached: Option<u32>,
    /// The last request ended on the reply cap.
    capped: bool,
    /// A continuation: the figures of what was written before it, which the new ones add to.
    prior: Option<GenerationStats>,
    /// A continuation ([`Turn::continue_reply`]): its prompt is not the assembly's, so its reported
    /// prompt tokens calibrate nothing.
    continuing: bool,
    tool_calls: BTreeMap<u32, ToolCall>,
    usage: Option<Usage>,
    response_id: Option<String>,
    throttle: SaveThrottle,
    actions: VecDeque<Action>,
    phase: Phase,
    attempts: u32,
    /// The prompt of the request in flight (what a probe sends again).
    sent_prompt: Option<Prompt>,
    /// Something of the request in flight arrived (any stream event).
    heard: bool,
    /// The failure a probe is out for; a turn probes at most once.
    probing: Option<Failure>,
    probed: bool,
    /// Which round of tool calls this request is (1: the turn's first request).
    round: u32,
    /// The calls of the rounds before this one, as the reply holds them.
    prior_calls: Vec<ToolCall>,
    /// Where this round's text begins in `text`, and whether a paragraph break goes before it
    /// (the reply already has text).
    round_start: usize,
    round_break: bool,
    /// The request ended other than whole (stopped, failed, cut off, capped): its calls are
    /// interrupted.
    calls_cut: bool,
}

impl Turn {
    /// Check the inputs, decide the path and queue the first request.
    pub fn start(s: TurnStart<'_>) -> Result<Turn, TurnError> {
        let new = checked(&s)?;
        let handle = s.conversation.remote_handle.as_ref();
        let path = path_for(handle, s.endpoint, s.assembly);
        let mut turn = Turn::new(&s, path);
        if let (TurnPath::Resumed, Some(h)) = (path, handle.cloned()) {
            let system = s
                .assembly
                .section(SectionKind::System)
                .map(|sec| sec.text.clone())
                .unwrap_or_default();
            let budget = s.assembly.budget_tokens;
            let (new_wire, _) = render_new(new, attach::file_chars(budget));
            let prompt = build_prompt_with(
                HistoryFormat::Messages,
                s.endpoint.protocol,
                system,
                &[],
                &new_wire,
            );
            turn.send(path, prompt, Some(h.id.clone()));
            turn.handle = Some(h);
        } else {
            turn.send(path, turn.full_prompt.clone(), None);
        }
        Ok(turn)
    }

    /// Continue: asks for the rest of `reply` (written so far, cut by the reply cap), the answer to
    /// the turn `s` describes (`s.reply_id` and `s.reply_seq` are `reply`'s). The whole context goes
    /// out, never a resumed session ([`continuation_prompt`]); what comes is appended to `reply`'s
    /// text, its figures added to `reply`'s. The continued part may be capped again.
    pub fn continue_reply(s: TurnStart<'_>, reply: &Message) -> Result<Turn, TurnError> {
        let mut turn = Turn::on_reply(&s, reply)?;
        let prompt = continuation_prompt(s.endpoint.protocol, &turn.full_prompt, &reply.content);
        turn.send(turn.path, prompt, None);
        Ok(turn)
    }

    /// The next round of a turn whose reply (`reply`, with `s.reply_id` and `s.reply_seq`) asked
    /// for tools, once every call is answered (`tools::ToolAction::Send`, whose `round` + 1 is
    /// `round`): the whole context goes out (never a resumed session), with the rounds so far, which
    /// the driver adds when it builds the request (`request::build_with_tools`); what comes is
    /// appended to `reply`'s text after a paragraph break, its earlier calls and figures kept.
    pub fn tool_round(s: TurnStart<'_>, reply: &Message, round: u32) -> Result<Turn, TurnError> {
        let mut turn = Turn::on_reply(&s, reply)?;
        turn.round_start = turn.text.len();
        turn.round_break = !turn.text.trim().is_empty();
        turn.round = round;
        turn.prior_calls = reply.meta.tool_calls.clone();
        turn.send(turn.path, turn.full_prompt.clone(), None);
        Ok(turn)
    }

    /// A turn that adds to `reply` (Continue, a tool round): the whole context goes out, never a
    /// resumed session; it starts from `reply`'s text, thinking and figures.
    fn on_reply(s: &TurnStart<'_>, reply: &Message) -> Result<Turn, TurnError> {
        checked(s)?;
        let path = match path_for(
            s.conversation.remote_handle.as_ref(),
            s.endpoint,
            s.assembly,
        ) {
            TurnPath::Resumed => TurnPath::Reinjected,
            path => path,
        };
        let mut turn = Turn::new(s, path);
        turn.text = reply.content.clone();
        turn.reasoning = reply.meta.reasoning.clone();
        turn.prior = reply.meta.stats;
        turn.continuing = true;
        Ok(turn)
    }

    /// A turn on `path` that has sent nothing yet.
    fn new(s: &TurnStart<'_>, path: TurnPath) -> Turn {
        Turn {
            conversation_id: s.conversation.id.clone(),
            endpoint_key: s.endpoint.key(),
            protocol: s.endpoint.protocol,
            stateful: s.endpoint.protocol.is_stateful(),
            path,
            handle: None,
            full_prompt: s.assembly.prompt.clone(),
            estimated_prompt_tokens: s.assembly.total_tokens,
            reply_id: s.reply_id.to_string(),
            reply_seq: s.reply_seq,
            text: String::new(),
            reasoning: None,
            clock: PieceClock::default(),
            timings: None,
            cached: None,
            capped: false,
            prior: None,
            continuing: false,
            tool_calls: BTreeMap::new(),
            usage: None,
            response_id: None,
            throttle: SaveThrottle::default(),
            actions: VecDeque::new(),
            phase: Phase::Streaming,
            attempts: 0,
            sent_prompt: None,
            heard: false,
            probing: None,
            probed: false,
            round: 1,
            prior_calls: Vec::new(),
            round_start: 0,
            round_break: false,
            calls_cut: false,
        }
    }

    fn send(&mut self, path: TurnPath, prompt: Prompt, previous_response_id: Option<String>) {
        self.attempts += 1;
        self.path = path;
        self.heard = false;
        self.sent_prompt = Some(prompt.clone());
        self.actions.push_back(Action::SendRequest {
            attempt: self.attempts,
            path,
            prompt,
            previous_response_id,
        });
    }

    /// The request asked for by the last `SendRequest` went out at `now` (the time to the first
    /// token is measured from here when the server reports none).
    pub fn handle_sent(&mut self, now: Millis) {
        self.clock = PieceClock {
            sent: Some(now),
            ..PieceClock::default()
        };
    }

    /// The path the turn is on now (it changes from Resumed to Reinjected if the session is gone).
    pub fn path(&self) -> TurnPath {
        self.path
    }

    /// The next thing the driver must do.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// When the driver must call [`Turn::handle_timeout`] (a held save becomes due).
    pub fn poll_timeout(&self) -> Option<Millis> {
        if self.phase == Phase::Finished {
            None
        } else {
            self.throttle.next_deadline()
        }
    }

    /// A timer fired.
    pub fn handle_timeout(&mut self, now: Millis) {
        if self.phase == Phase::Streaming && self.throttle.on_tick(now) {
            self.save(MessageStatus::Streaming, None, false);
        }
    }

    /// The user pressed stop: cancel the request, keep the partial reply as interrupted.
    pub fn handle_stop(&mut self, now: Millis) {
        if self.phase == Phase::Finished {
            return;
        }
        self.actions.push_back(Action::CancelRequest);
        self.finish(TurnStatus::Interrupted, Some(failure::aborted()), now);
    }

    /// A decoded stream event of the request in flight.
    pub fn handle_event(&mut self, event: StreamEvent, now: Millis) {
        if self.phase == Phase::Finished {
            return;
        }
        if !matches!(event, StreamEvent::Error(_)) {
            self.heard = true;
        }
        if matches!(
            event,
            StreamEvent::TextDelta(_)
                | StreamEvent::ReasoningDelta(_)
                | StreamEvent::ToolCallDelta { .. }
        ) {
            self.clock.piece(now);
        }
        match event {
            StreamEvent::TextDelta(t) => {
                if !t.is_empty() {
                    self.answer_began(now);
                    if std::mem::take(&mut self.round_break) {
                        self.text.push_str("\n\n");
                        self.round_start = self.text.len();
                    }
                    self.text.push_str(&t);
                    self.changed(now);
                }
            }
            StreamEvent::ReasoningDelta(t) => self.reasoned(&t, now),
            StreamEvent::ToolCallDelta {
                index,
                id,
                name,
                arguments,
            } => {
                self.answer_began(now);
                let call = self.tool_calls.entry(index).or_default();
                if let Some(id) = id {
                    call.id = id;
                }
                if let Some(name) = name {
                    call.name.push_str(&name);
                }
                call.arguments.push_str(&arguments);
                self.changed(now);
            }
            StreamEvent::Usage(u) => self.usage = Some(u),
            StreamEvent::Timings(t) => self.timings = Some(t),
            StreamEvent::CachedTokens(n) => self.cached = Some(n),
            StreamEvent::ResponseId(id) => self.response_id = Some(id),
            StreamEvent::Done { finish_reason } => {
                self.capped = capped_by(self.protocol, finish_reason.as_deref());
                self.complete(now)
            }
            StreamEvent::Error(e) => {
                let resuming = self.path == TurnPath::Resumed;
                if e.code.as_deref() == Some(CODE_CUT_OFF) && !self.heard && self.may_probe() {
                    return self.probe(failure::from_stream_error(&e, resuming));
                }
                self.handle_failure(failure::from_stream_error(&e, resuming), now);
            }
        }
    }

    /// The request in flight failed (HTTP error, network, timeout, cut-off stream, abort).
    pub fn handle_failure(&mut self, failure: Failure, now: Millis) {
        if self.phase == Phase::Finished {
            return;
        }
        if self.path == TurnPath::Resumed && failure_is_session_gone(&failure) {
            self.reinject();
            return;
        }
        let failure = self.about_images(failure);
        let has_partial = !self.text.is_empty() || !self.tool_calls.is_empty();
        let status = match failure.kind {
            FailureKind::Aborted => TurnStatus::Interrupted,
            FailureKind::Network | FailureKind::Timeout | FailureKind::Malformed if has_partial => {
                TurnStatus::Interrupted
            }
            _ => TurnStatus::Error,
        };
        self.finish(status, Some(failure), now);
    }

    /// Whether the request in flight may be asked about with a probe (module doc): openai-chat,
    /// not probed yet.
    fn may_probe(&self) -> bool {
        self.protocol == Protocol::OpenAiChat && !self.probed
    }

    /// The stream ended before anything arrived (`first`): ask why before failing with it.
    fn probe(&mut self, first: Failure) {
        self.probed = true;
        self.probing = Some(first);
        let prompt = self.sent_prompt.clone().unwrap_or_default();
        self.actions.push_back(Action::Probe { prompt });
    }

    /// What the probe ([`Action::Probe`]) got: the server's refusal (`Some`), which becomes the
    /// turn's failure, or none (the first failure stands).
    pub fn handle_probe(&mut self, refusal: Option<Failure>, now: Millis) {
        let Some(first) = self.probing.take() else {
            return;
        };
        self.handle_failure(refusal.unwrap_or(first), now);
    }

    /// A refusal of a request that carried images, naming them (`attach::refuses_images`), says
    /// the model cannot see images (what the server said stays in "How to fix").
    fn about_images(&self, failure: Failure) -> Failure {
        let carried = self
            .full_prompt
            .messages
            .iter()
            .any(|m| !m.images.is_empty());
        let refused = failure
            .status
            .is_some_and(|st| attach::refuses_images(st, &failure.text()));
        if !carried || !refused {
            return failure;
        }
        Failure {
            message: attach::REFUSED_IMAGES.to_string(),
            ..failure
        }
    }

    /// The remote session is gone: mark the handle dead and re-send with the full context.
    fn reinject(&mut self) {
        if let Some(mut h) = self.handle.take() {
            h.dead = true;
            self.actions.push_back(Action::StoreHandle {
                conversation_id: self.conversation_id.clone(),
                handle: Some(h),
            });
        }
        self.text.clear();
        self.reasoning = None;
        self.timings = None;
        self.cached = None;
        self.capped = false;
        self.tool_calls.clear();
        self.usage = None;
        self.response_id = None;
        self.throttle = SaveThrottle::default();
        self.send(TurnPath::Reinjected, self.full_prompt.clone(), None);
    }

    /// A piece of reasoning: the first starts the clock of "Thought for N s".
    fn reasoned(&mut self, t: &str, now: Millis) {
        if t.is_empty() {
            return;
        }
        let r = self.reasoning.get_or_insert_with(|| Reasoning {
            text: String::new(),
            started_at: now,
            ended_at: None,
        });
        r.text.push_str(t);
        self.changed(now);
    }

    /// The answer began (or the reply ended): the thinking is over.
    fn answer_began(&mut self, now: Millis) {
        if let Some(r) = self.reasoning.as_mut().filter(|r| r.ended_at.is_none()) {
            r.ended_at = Some(now);
        }
    }

    fn changed(&mut self, now: Millis) {
        if self.throttle.on_change(now) {
            self.save(MessageStatus::Streaming, None, false);
        }
    }

    /// Every call of the reply: the earlier rounds', then this request's ([`Turn::round_calls`]).
    fn tool_calls_vec(&self) -> Vec<ToolCall> {
        let mut all = self.prior_calls.clone();
        all.extend(self.round_calls());
        all
    }

    /// This request's calls, in the order the stream numbered them, each with an id; waiting
    /// (for the tool loop), or interrupted once the request ended other than whole or on the reply
    /// cap (never run).
    fn round_calls(&self) -> Vec<ToolCall> {
        let status = if self.calls_cut {
            ToolStatus::Interrupted
        } else {
            ToolStatus::Waiting
        };
        self.tool_calls
            .values()
            .enumerate()
            .map(|(i, c)| {
                let mut c = c.clone();
                if c.id.is_empty() {
                    c.id = call_id(self.round, i);
                }
                c.status = Some(status);
                c
            })
            .collect()
    }

    fn save(&mut self, status: MessageStatus, error: Option<String>, is_final: bool) {
        self.actions.push_back(Action::SaveReply(ReplySave {
            message_id: self.reply_id.clone(),
            seq: self.reply_seq,
            content: self.text.clone(),
            tool_calls: self.tool_calls_vec(),
            status,
            usage: self.usage,
            path: self.path,
            error,
            is_final,
            reasoning: self.reasoning.clone(),
            stats: self.stats(),
            capped: self.capped,
        }));
    }

    /// The figures of the reply: the server's where it gave them, else measured; none until it
    /// reported how many tokens it generated.
    fn stats(&self) -> Option<GenerationStats> {
        let Some(new) = self.request_stats() else {
            return self.prior;
        };
        // A continuation's figures add to those of what was written before it.
        Some(match self.prior {
            None => new,
            Some(p) => GenerationStats {
                tokens: p.tokens.saturating_add(new.tokens),
                first_token_ms: p.first_token_ms.or(new.first_token_ms),
                ..new
            },
        })
    }

    /// The figures of the request in flight alone.
    fn request_stats(&self) -> Option<GenerationStats> {
        let t = self.timings.unwrap_or_default();
        let tokens = t
            .tokens
            .or(self.usage.map(|u| u.completion_tokens))
            .filter(|n| *n > 0)?;
        let c = self.clock;
        let measured_first = c.first.zip(c.sent).map(|(f, s)| f.saturating_sub(s));
        let first = t
            .first_token_ms
            .map(|ms| ms.round() as i64)
            .or(measured_first)
            .and_then(|ms| u32::try_from(ms).ok());
        let span = c.last.zip(c.first).map(|(l, f)| l.saturating_sub(f));
        let measured_speed = span
            .filter(|ms| *ms > 0 && tokens > 1)
            .map(|ms| f64::from(tokens - 1) * 1000.0 / ms as f64);
        let speed = t.tokens_per_s.or(measured_speed).map(|v| v as f32);
        Some(GenerationStats {
            tokens,
            first_token_ms: first,
            tokens_per_s: speed.filter(|v| v.is_finite() && *v > 0.0),
            cached_tokens: self.cached,
        })
    }

    fn complete(&mut self, now: Millis) {
        if self.stateful {
            if let Some(id) = self.response_id.clone() {
                self.actions.push_back(Action::StoreHandle {
                    conversation_id: self.conversation_id.clone(),
                    handle: Some(RemoteHandle {
                        id,
                        endpoint_key: self.endpoint_key.clone(),
                        covers_up_to_seq: self.reply_seq,
                        confirmed_at: now,
                        dead: false,
                    }),
                });
            }
        }
        self.finish(TurnStatus::Complete, None, now);
    }

    fn finish(&mut self, status: TurnStatus, failure: Option<Failure>, now: Millis) {
        // A capped reply's last call may be cut mid-arguments: none of its calls is run.
        self.calls_cut = status != TurnStatus::Complete || self.capped;
        self.answer_began(now);
        self.throttle.finish(now);
        self.save(
            status.message_status(),
            failure.as_ref().map(|f| f.message.clone()),
            true,
        );
        let calibration = match (self.path, self.usage) {
            (TurnPath::Resumed, _) | (_, None) => None,
            _ if self.continuing => None,
            (_, Some(u)) => Some(CalibrationSample {
                estimated: self.estimated_prompt_tokens,
                reported: u.prompt_tokens,
            }),
        };
        self.actions.push_back(Action::Finished(TurnOutcome {
            status,
            path: self.path,
            content: self.text.clone(),
            tool_calls: self.tool_calls_vec(),
            usage: self.usage,
            failure,
            calibration,
            attempts: self.attempts,
            capped: self.capped,
            round_text: self.text[self.round_start.min(self.text.len())..].to_string(),
            round_calls: self.round_calls(),
        }));
        self.phase = Phase::Finished;
    }
}

/// When a request went out and when the first and last pieces of its reply arrived.
#[derive(Debug, Clone, Copy, Default)]
struct PieceClock {
    sent: Option<Millis>,
    first: Option<Millis>,
    last: Option<Millis>,
}

impl PieceClock {
    fn piece(&mut self, now: Millis) {
        self.first.get_or_insert(now);
        self.last = Some(now);
    }
}

/// The new user message of `s`, once the turn's inputs agree: it is in the history, a user's, the
/// one the assembly was built for, from the history as it stands, and the reply comes after it all.
fn checked<'a>(s: &TurnStart<'a>) -> Result<&'a Message, TurnError> {
    let new = s
        .history
        .iter()
        .find(|m| m.id == s.new_message_id)
        .ok_or_else(|| TurnError::NewMessageMissing(s.new_message_id.to_string()))?;
    if new.role != Role::User {
        return Err(TurnError::NotAUserMessage);
    }
    if s.assembly.new_message_id != new.id {
        return Err(TurnError::WrongNewMessage {
            assembled: s.assembly.new_message_id.clone(),
            expected: new.id.clone(),
        });
    }
    let previous_seq = s
        .history
        .iter()
        .rev()
        .find(|m| m.id != new.id)
        .map(|m| m.seq);
    if s.assembly.history_through_seq != previous_seq {
        return Err(TurnError::StaleContext {
            assembled: s.assembly.history_through_seq,
            actual: previous_seq,
        });
    }
    if s.history.last().is_some_and(|l| s.reply_seq <= l.seq) {
        return Err(TurnError::BadReplySeq(s.reply_seq));
    }
    Ok(new)
}

/// SessionGone, or a 4xx that is about the previous response id.
fn failure_is_session_gone(f: &Failure) -> bool {
    match f.kind {
        FailureKind::SessionGone => true,
        FailureKind::BadRequest | FailureKind::NotFound => {
            let m = f.text().to_ascii_lowercase();
            m.contains(SESSION_GONE_CODE) || m.contains("previous_response")
        }
        _ => false,
    }
}
