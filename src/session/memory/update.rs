//! Running the memory update (summary + entity graph) and the memory pane's edits. When an update is
//! due, what it sends, how the reply is parsed and merged are the engine's (`engine::memory`); this
//! file loads, sends, and stores the result in one transaction. A failed update never touches the
//! stored memory. Must not import `ui`.

use super::service::{Memory, MemoryError};
use crate::engine::decode::StreamEvent;
use crate::engine::failure::{self, Failure};
use crate::engine::memory::schedule::Action;
use crate::engine::memory::{
    apply_update, build_update_request, due, judge, next_form, refused_http, refused_stream,
    retry_allowed, server_of, start_form, summary_max_chars, Admit, DueInput, Graph,
    MemoryError as ReplyError, MemoryFailure, MemoryForm, ReplyCollector, UpdateEnd, UpdateLimits,
    UpdateRequest, Verdict,
};
use crate::engine::model::{
    EndpointProfile, EntityNode, EntityScope, MemoryOverrides, Millis, Prompt, WireMessage,
};
use crate::engine::prefix::update_continues;
use crate::engine::request::{self, RequestOptions};
use crate::engine::slots::Purpose;
use crate::engine::tabs::Change;
use crate::session::shared::error::{Boxed, ErrorKind};
use crate::session::shared::events::Local;
use crate::session::shared::stream::{Consumer, Pump};
use crate::session::shared::{new_id, now, transport_failure};
use crate::transport::{Stopper, TransportError};
use std::rc::Rc;

/// Split point `memory` (scripts/build-wasm.sh): sending an update and what only it reaches (the
/// forms, the reply collector, parsing, grounding, merging into the graph) are in the memory chunk,
/// fetched when the first update runs; a failed fetch is [`MemoryError::Unavailable`].
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(memory, fallible, return_wrapper(let future = _; { future.await } -> Result<bool, MemoryError>)))]
fn run_request_split<'a>(
    session: &'a Memory,
    id: &'a str,
    u: Update<'a>,
    stopper: &'a Stopper,
    contended: &'a dyn Fn() -> bool,
) -> Boxed<'a, bool, MemoryError> {
    Box::pin(session.run_request_now(id, u, stopper, contended))
}

/// Split point `memory`: whether an update is due (reading the span, the backoff after a failure)
/// and running it, so that none of it is in the main wasm (the chunk is fetched by the first turn's
/// check, or by "Update memory now").
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(memory, fallible, return_wrapper(let future = _; { future.await } -> Result<bool, MemoryError>)))]
fn update_memory_split<'a>(
    session: &'a Rc<Memory>,
    id: &'a str,
    overflow: bool,
    force: bool,
) -> Boxed<'a, bool, MemoryError> {
    Box::pin(session.update_memory_here(id, overflow, force))
}

/// Most updates of one conversation run one after the other (each lands before the next starts).
const MAX_UPDATES_IN_A_ROW: usize = 8;

/// Most messages looked at when deciding whether an update is due.
const DUE_WINDOW: usize = 400;

impl Memory {
    /// Runs the memory update when the engine says it is due (or always, with `force`). Serial per
    /// conversation; reports failures as notices and never changes memory on failure.
    pub(crate) async fn update_memory_if_due(
        self: &Rc<Self>,
        id: &str,
        overflow: bool,
        force: bool,
    ) {
        // An update covers what fits its request; once one lands on an idle server, the next runs at
        // once while memory is still behind (a history that outgrew the update's budget, or updates
        // that gave way to the user's turns), each re-checking that one is due.
        let mut result = self.update_memory(id, overflow, force).await;
        for _ in 1..MAX_UPDATES_IN_A_ROW {
            if !matches!(result, Ok(true)) || !self.schedule.borrow().is_idle(&self.memory_server())
            {
                break;
            }
            result = self.update_memory(id, false, false).await;
        }
        match result {
            Ok(_) | Err(MemoryError::Quiet(_) | MemoryError::Busy | MemoryError::Deferred) => {}
            Err(MemoryError::Request(reason)) => self.core.emit(Local::Error {
                conversation_id: Some(id.to_string()),
                message: MemoryError::Failed(reason).to_string(),
                kind: ErrorKind::Memory,
            }),
            Err(e) => self.core.emit(Local::Error {
                conversation_id: Some(id.to_string()),
                message: MemoryError::Failed(e.to_string()).to_string(),
                kind: e.kind(),
            }),
        }
    }

    /// The "Update memory now" button.
    pub async fn update_memory_now(self: &Rc<Self>, id: &str) -> Result<(), MemoryError> {
        match self.update_memory(id, false, true).await {
            Ok(_) => Ok(()),
            // Asked for by the user: always said, even when it is the same failure as before.
            Err(MemoryError::Quiet(reason) | MemoryError::Request(reason)) => {
                Err(MemoryError::Failed(reason))
            }
            Err(e) => Err(e),
        }
    }

    /// Returns whether an update ran. Never twice at once: one running in this tab refuses at once
    /// ([`MemoryError::Busy`]), and one tab at a time updates a conversation's memory (a Web
    /// Lock): a tab that waited re-reads everything, so it does not repeat the update another tab
    /// just made (a forced update is skipped when a new summary arrived while it waited).
    async fn update_memory(
        self: &Rc<Self>,
        id: &str,
        overflow: bool,
        force: bool,
    ) -> Result<bool, MemoryError> {
        update_memory_split(self, id, overflow, force).await
    }

    async fn update_memory_here(
        self: &Rc<Self>,
        id: &str,
        overflow: bool,
        force: bool,
    ) -> Result<bool, MemoryError> {
        let server = self.memory_server();
        if self.memory_running.borrow().contains(id) {
            // A live update running here: this one is remembered and runs after it, if still due.
            if self.schedule.borrow().is_running(id) {
                self.schedule.borrow_mut().handle_update_wanted(id, &server);
            }
            return Err(MemoryError::Busy);
        }
        let seen = self.core.store.latest_summary(id).await?.map(|s| s.version);
        let _lock = crate::session::shared::tabs::lock(&format!(
            "memoire-memory:{}:{id}",
            self.core.store.name()
        ))
        .await;
        if force && self.core.store.latest_summary(id).await?.map(|s| s.version) != seen {
            return Ok(false);
        }
        let Some(due) = self.due_update(id, overflow, force).await? else {
            return Ok(false);
        };
        if !self.core.settings.borrow().has_endpoint() {
            return Err(MemoryError::NoEndpoint);
        }
        // A chat turn goes first: while one is in flight on the memory's server, the update waits
        // and runs when the turn is over (`engine::memory::schedule`).
        if self.schedule.borrow_mut().handle_update_wanted(id, &server) == Admit::Wait {
            return Err(MemoryError::Deferred);
        }
        self.run_scheduled(id, due).await
    }

    /// What an update of the conversation would cover, when one is due (or always, with `force`)
    /// and automatic updates are not backing off after a failure; `None` otherwise.
    async fn due_update(
        &self,
        id: &str,
        overflow: bool,
        force: bool,
    ) -> Result<Option<DueUpdate>, MemoryError> {
        let conv = self.core.conversation(id).await?;
        let config = self.core.config_for(&conv);
        let previous = self.core.store.latest_summary(id).await?;
        let covers = previous.as_ref().map(|s| s.covers_up_to_seq);
        let messages = match covers {
            Some(seq) => self.core.store.load_since(id, seq).await?,
            None => self.core.store.load_last(id, DUE_WINDOW).await?,
        };
        // Memory is made of the branch on screen, never of the alternatives off it.
        let messages = self.core.on_branch(id, messages).await?;
        let decision = due(DueInput {
            messages: &messages,
            covers_up_to_seq: covers,
            every_pairs: config.summary_every_pairs,
            over_budget: overflow,
        });
        if !force && !decision.is_due() {
            return Ok(None);
        }
        // After a failure, automatic updates back off (the engine says when to try again).
        if !force {
            let key = self
                .core
                .settings
                .borrow()
                .memory_endpoint_for(&conv.memory_overrides)
                .key();
            let failure = self.core.store.memory_failure(id).await?;
            if !retry_allowed(failure.as_ref(), &messages, &key, now()) {
                return Ok(None);
            }
        }
        Ok(Some(DueUpdate {
            conv,
            config,
            previous,
            messages,
        }))
    }

    /// Runs an admitted update, known to the scheduler and the UI as running (stoppable by a chat
    /// turn) until it ends, then tells the scheduler how it ended and does what it asks.
    async fn run_scheduled(self: &Rc<Self>, id: &str, due: DueUpdate) -> Result<bool, MemoryError> {
        let DueUpdate {
            conv,
            config,
            previous,
            messages,
        } = due;
        let stopper = Stopper::new();
        self.memory_stops
            .borrow_mut()
            .insert(id.to_string(), stopper.clone());
        self.memory_running.borrow_mut().insert(id.to_string());
        self.core.emit(Change::MemoryUpdating {
            conversation_id: id.to_string(),
            running: true,
        });
        let result: Result<bool, MemoryError> = self
            .run_update(
                id,
                &conv.message_count,
                previous,
                &messages,
                &config,
                &conv.memory_overrides,
                &stopper,
            )
            .await;
        self.memory_stops.borrow_mut().remove(id);
        self.memory_running.borrow_mut().remove(id);
        let end = UpdateEnd::of_run(match &result {
            Ok(stored) => Ok(*stored),
            Err(e) => Err(matches!(e, MemoryError::Deferred)),
        });
        self.schedule.borrow_mut().handle_update_ended(id, &end);
        self.core.emit(Change::MemoryUpdating {
            conversation_id: id.to_string(),
            running: false,
        });
        self.follow_schedule();
        result
    }

    /// The server memory updates talk to (`engine::memory::server_of`).
    pub(crate) fn memory_server(&self) -> String {
        let endpoint = self
            .core
            .settings
            .borrow()
            .memory_endpoint_for(&MemoryOverrides::default());
        server_of(&endpoint.base_url)
    }

    /// The server chat turns talk to.
    pub(crate) fn chat_server(&self) -> String {
        server_of(&self.core.settings.borrow().endpoint.base_url)
    }

    /// A chat turn is about to send: the updates running on its server stop (they run again after
    /// the turn, see `engine::memory::schedule`).
    pub(crate) fn chat_started(self: &Rc<Self>, server: &str) {
        self.schedule.borrow_mut().handle_chat_started(server);
        self.follow_schedule();
    }

    /// A chat turn is over: the updates that waited for its server run now (if still due).
    pub(crate) fn chat_ended(self: &Rc<Self>, server: &str) {
        self.schedule.borrow_mut().handle_chat_ended(server);
        self.follow_schedule();
    }

    /// Does what the scheduler asks: stops updates, starts the ones that waited.
    fn follow_schedule(self: &Rc<Self>) {
        loop {
            let action = self.schedule.borrow_mut().poll_action();
            match action {
                None => return,
                Some(Action::Stop { conversation_id }) => {
                    if let Some(s) = self.memory_stops.borrow().get(&conversation_id) {
                        s.stop();
                    }
                }
                Some(Action::Start { conversation_id }) => {
                    let this = self.clone();
                    wasm_bindgen_futures::spawn_local(async move {
                        this.update_memory_if_due(&conversation_id, false, false)
                            .await;
                        this.core.warm(&conversation_id).await;
                    });
                }
            }
        }
    }

    async fn run_update(
        &self,
        id: &str,
        message_count: &u64,
        previous: Option<crate::engine::model::ConversationSummary>,
        messages: &[crate::engine::model::Message],
        config: &crate::engine::model::MemoryConfig,
        overrides: &MemoryOverrides,
        stopper: &Stopper,
    ) -> Result<bool, MemoryError> {
        let scope = EntityScope::Conversation(id.to_string());
        let existing = self.core.store.load_entities(&scope).await?;
        let req = build_update_request(
            previous.as_ref(),
            messages,
            &existing,
            &UpdateLimits::from_config(config),
        )
        .map_err(memory_error)?;
        let endpoint = self.core.settings.borrow().memory_endpoint_for(overrides);
        let after = self.continues_chat(id, &endpoint, messages, &req, config);
        let update = Update {
            after,
            previous,
            req,
            existing,
            message_count: *message_count,
            seen_seq: messages.iter().map(|m| m.seq).max().unwrap_or(0),
            config,
            overrides,
        };
        let contended = || self.schedule.borrow().is_contended(id);
        let landed = self.run_request(id, update, stopper, &contended).await?;
        if landed {
            // What the user said in the span, about themselves (a message another tab stored, or
            // one whose own take-in failed); already known sentences change nothing.
            self.user_span(messages, config).await.ok();
        }
        Ok(landed)
    }

    /// The chat prompt the server last read for conversation `id` and its reply, when an update
    /// of `messages` by `req` to `endpoint` continues them (`engine::prefix::update_continues`).
    fn continues_chat(
        &self,
        id: &str,
        endpoint: &EndpointProfile,
        messages: &[crate::engine::model::Message],
        req: &UpdateRequest,
        config: &crate::engine::model::MemoryConfig,
    ) -> Option<(Prompt, WireMessage)> {
        let prompts = self.core.prompts.borrow();
        let last = prompts.get(id)?.last.as_ref()?;
        let reply = update_continues(
            last,
            &endpoint.key(),
            messages,
            req.span.to_seq,
            config.max_message_chars,
        )?;
        Some((last.prompt.clone(), reply))
    }

    /// Sends one update, and stores its result in one transaction: the new summary and graph, or
    /// (the previous memory untouched) the failure. Returns false, having written nothing, when
    /// `stopper` stopped the request. `contended` says whether a chat turn to the same server came
    /// while it ran: an update that did not land is then judged by `engine::memory::schedule::judge`,
    /// and a deferred one records nothing and is [`MemoryError::Deferred`].
    pub(crate) async fn run_request(
        &self,
        id: &str,
        u: Update<'_>,
        stopper: &Stopper,
        contended: &dyn Fn() -> bool,
    ) -> Result<bool, MemoryError> {
        run_request_split(self, id, u, stopper, contended).await
    }

    async fn run_request_now(
        &self,
        id: &str,
        u: Update<'_>,
        stopper: &Stopper,
        contended: &dyn Fn() -> bool,
    ) -> Result<bool, MemoryError> {
        let scope = EntityScope::Conversation(id.to_string());
        let endpoint = self.core.settings.borrow().memory_endpoint_for(u.overrides);
        let (form, outcome) = self
            .ask_for_update(&endpoint, &u.req, u.after.as_ref(), stopper)
            .await;
        if stopper.is_stopped() {
            return Ok(false);
        }
        // A reply cut short while a chat turn came is not the model's whole answer: not parsed.
        let outcome = match outcome {
            Ok((_, true)) if contended() => {
                Err((String::new(), String::new(), UpdateEnd::Unusable))
            }
            Ok((reply, _)) => Ok(reply),
            Err(e) => Err(e),
        };
        let parsed = outcome.and_then(|reply| {
            u.req.read_reply(&reply).map_err(|e| {
                let reason = format!("The memory reply could not be used: {e}.");
                (reason, reply, UpdateEnd::Unusable)
            })
        });
        let mut parsed = match parsed {
            Ok(p) => p,
            Err((reason, raw, end)) => {
                if judge(&end, contended()) == Verdict::Deferred {
                    return Err(MemoryError::Deferred);
                }
                let seen = (u.seen_seq, endpoint.key());
                return Err(self.record_failure(id, reason, &raw, form, seen).await?);
            }
        };
        crate::engine::memory::catchup::settle(&mut parsed);
        let mut graph = Graph::new(u.existing);
        let applied = apply_update(
            &parsed,
            u.previous.as_ref(),
            id,
            &u.req.span,
            u.message_count,
            &mut graph,
            scope.clone(),
            now(),
            summary_max_chars(u.config),
            || new_id("e"),
        );
        // Another update of this conversation landed while this one ran (it was built on an older
        // summary): this one is not stored; the conversation's next update covers what is left.
        let latest = self.core.store.latest_summary(id).await?.map(|s| s.version);
        if latest != u.previous.as_ref().map(|s| s.version) {
            return Ok(false);
        }
        self.core
            .store
            .save_memory(applied.summary.as_ref(), &scope, graph.nodes())
            .await?;
        self.core.store.set_memory_failure(id, None).await?;
        self.core.emit(Change::MemoryChanged(id.to_string()));
        // The facts about the user the model proposed, kept where the user's words hold them.
        self.user_proposed(id, &u.req.read, &parsed.user_facts, u.config)
            .await
            .ok();
        Ok(true)
    }

    /// Stores a failed update's failure (the raw reply with it) and reports it; returns the error
    /// to give: a repeat of the same failure is shown in the memory pane only, not as another
    /// banner. `seen`: the highest seq the update looked at, and the endpoint's key.
    async fn record_failure(
        &self,
        id: &str,
        reason: String,
        raw: &str,
        form: MemoryForm,
        seen: (u64, String),
    ) -> Result<MemoryError, MemoryError> {
        let before = self.core.store.memory_failure(id).await.ok().flatten();
        let failure = MemoryFailure::new(now(), reason.clone(), raw, form).following(
            before.as_ref(),
            seen.0,
            &seen.1,
        );
        let repeated = failure.repeats(before.as_ref());
        self.core
            .store
            .set_memory_failure(id, Some(&failure))
            .await?;
        self.core.emit(Change::MemoryChanged(id.to_string()));
        Ok(if repeated {
            MemoryError::Quiet(reason)
        } else {
            MemoryError::Request(reason)
        })
    }

    /// Sends the update in the form remembered for the endpoint (or its best form); when the server
    /// refuses that form, once more in the next. Remembers the form the server took. Returns the form
    /// of the last request, and the reply text with whether it was cut short
    /// (`ReplyCollector::was_cut`), or (reason, what came back, how it ended).
    async fn ask_for_update(
        &self,
        endpoint: &EndpointProfile,
        req: &UpdateRequest,
        after: Option<&(Prompt, WireMessage)>,
        stopper: &Stopper,
    ) -> (
        MemoryForm,
        Result<(String, bool), (String, String, UpdateEnd)>,
    ) {
        let key = endpoint.key();
        let remembered = self.core.store.memory_form(&key).await.ok().flatten();
        let mut form = start_form(endpoint.protocol, remembered);
        let mut retried = false;
        loop {
            let opened = std::cell::Cell::new(false);
            let result = complete(
                endpoint,
                &match after {
                    Some((chat, reply)) => req.prompt_after(form, chat, reply),
                    None => req.prompt_for(form),
                },
                &RequestOptions {
                    slot: self.core.slot_use(endpoint, Purpose::Memory),
                    ..req.request_options(form)
                },
                form,
                stopper,
                &opened,
            )
            .await;
            if let Err(Completion::Refused { .. }) = &result {
                if let Some(next) =
                    next_form(endpoint.protocol, form).filter(|_| !retried && !stopper.is_stopped())
                {
                    form = next;
                    retried = true;
                    continue;
                }
            }
            let refused = matches!(result, Err(Completion::Refused { .. }));
            // The server took the form once it answered in it (a stream opened), even when the
            // update was then stopped for a chat turn: the next one starts there, not with a refusal.
            let taken = !refused && (!stopper.is_stopped() || opened.get());
            if taken && remembered != Some(form) {
                self.core.store.remember_memory_form(&key, form).await.ok();
            }
            let outcome = result.map_err(|c| match c {
                Completion::Refused { failure, body } | Completion::Failed { failure, body } => {
                    (failure.text(), body, UpdateEnd::Failed(failure.kind))
                }
            });
            return (form, outcome);
        }
    }
}

/// One memory update to run: its request, and what applying its reply needs.
pub(crate) struct Update<'a> {
    /// The chat prompt the server last read and its reply, when the update continues them
    /// (`engine::prefix::update_continues`).
    pub after: Option<(Prompt, WireMessage)>,
    pub previous: Option<crate::engine::model::ConversationSummary>,
    pub req: UpdateRequest,
    /// The conversation's entities the request listed.
    pub existing: Vec<EntityNode>,
    /// The message count the new summary records.
    pub message_count: u64,
    /// The highest seq the update looked at (a failure's back-off counts turns after it).
    pub seen_seq: u64,
    pub config: &'a crate::engine::model::MemoryConfig,
    pub overrides: &'a MemoryOverrides,
}

/// An update found due: the conversation, its memory config, the summary it builds on and the
/// messages since (on the branch on screen).
struct DueUpdate {
    conv: crate::engine::model::Conversation,
    config: crate::engine::model::MemoryConfig,
    previous: Option<crate::engine::model::ConversationSummary>,
    messages: Vec<crate::engine::model::Message>,
}

pub(crate) fn memory_error(e: ReplyError) -> MemoryError {
    MemoryError::Invalid(e.to_string())
}

/// How a memory request ended when it gave no reply text.
pub(crate) enum Completion {
    /// The server does not take the request's output form (see `engine::memory::form`).
    Refused { failure: Failure, body: String },
    /// Any other failure; `body` is what came back (an error body or a partial reply).
    Failed { failure: Failure, body: String },
}

/// Why a memory request got no body: a refusal of `form` (an HTTP error naming it) or another failure.
fn open_failure(endpoint: &EndpointProfile, form: MemoryForm, e: TransportError) -> Completion {
    let body = match &e {
        TransportError::Http { body, .. } => body.clone(),
        _ => String::new(),
    };
    let refused = matches!(&e, TransportError::Http { status, body, .. } if refused_http(form, *status, body));
    let failure = transport_failure(e, &endpoint.base_url, false);
    if refused {
        Completion::Refused { failure, body }
    } else {
        Completion::Failed { failure, body }
    }
}

/// A memory request's reply as the pump feeds it: the engine's collector, and how it ended.
struct MemoryReply<'a> {
    collector: ReplyCollector,
    form: MemoryForm,
    base_url: &'a str,
    outcome: Option<Result<(String, bool), Completion>>,
}

impl Consumer for MemoryReply<'_> {
    fn handle_event(&mut self, event: StreamEvent, _now: Millis) {
        self.outcome = match self.collector.handle_event(event) {
            None => return,
            Some(Ok(text)) => Some(Ok((text, self.collector.was_cut()))),
            Some(Err(e)) if refused_stream(self.form, &e) => Some(Err(Completion::Refused {
                failure: failure::from_stream_error(&e, false),
                body: e.message,
            })),
            Some(Err(e)) => Some(Err(Completion::Failed {
                failure: failure::from_stream_error(&e, false),
                body: self.collector.partial(),
            })),
        };
    }

    fn handle_failure(&mut self, error: TransportError, _now: Millis) {
        self.outcome = Some(Err(Completion::Failed {
            failure: transport_failure(error, self.base_url, false),
            body: self.collector.partial(),
        }));
    }
}

/// Sends one memory request and collects the whole reply (text, or the forced tool's input), with
/// whether the stream ended without a finish reason; `opened` is set once the server answered 2xx.
pub(crate) async fn complete(
    endpoint: &EndpointProfile,
    prompt: &Prompt,
    options: &RequestOptions,
    form: MemoryForm,
    stopper: &Stopper,
    opened: &std::cell::Cell<bool>,
) -> Result<(String, bool), Completion> {
    let req = request::build(endpoint, prompt, options).map_err(|refused| Completion::Failed {
        failure: failure::key_refused(&refused),
        body: String::new(),
    })?;
    let mut pump = Pump::open(&req, stopper, endpoint.protocol)
        .await
        .map_err(|e| open_failure(endpoint, form, e))?;
    opened.set(true);
    let mut reply = MemoryReply {
        collector: ReplyCollector::new(form),
        form,
        base_url: &endpoint.base_url,
        outcome: None,
    };
    pump.run(&mut reply, |r| r.outcome.is_some()).await;
    // Every body ends in `Done` or `Error` (see `stream`), so an outcome is there.
    reply.outcome.unwrap_or_else(|| {
        Err(Completion::Failed {
            failure: failure::aborted(),
            body: reply.collector.partial(),
        })
    })
}
