//! Running the memory update (summary + entity graph): a thin driver of the engine's machine
//! (`engine::memory::update::Update`), which decides everything — whether an update is due, backing
//! off, skipped, deferred for a chat turn, what it sends and in which form, what its reply means,
//! what is written, whether the next runs at once. This file executes what it asks: checks what
//! runs in this tab, takes the conversation's Web Lock, loads (one store transaction for the span,
//! one for the graph), asks the tab's scheduler, sends over the shared stream pump, writes the
//! result in one transaction, and says what changed. It also runs a memory build's chunks the same
//! way (`catchup.rs`), and sends the title's small request (`complete`). A failed update never
//! touches the stored memory. Must not import `ui`.

use super::service::{Memory, MemoryError};
use crate::engine::context_window::fit;
use crate::engine::decode::StreamEvent;
use crate::engine::failure::Failure;
use crate::engine::failure::FailureKind;
use crate::engine::memory::schedule::Action as Schedule;
use crate::engine::memory::update::{Action, Chunk, Finish, Here, Loaded, Update};
use crate::engine::memory::{
    server_of, MemoryError as ReplyError, MemoryForm, ReplyCollector, UpdateEnd,
};
use crate::engine::model::{EndpointProfile, MemoryOverrides, Millis, Prompt, Protocol};
use crate::engine::request::HttpRequest;
use crate::engine::request::{self, RequestOptions};
use crate::engine::slots::Purpose;
use crate::engine::tabs::Change;
use crate::session::shared::branch::{anchor_of, branch_key};
use crate::session::shared::error::{Boxed, ErrorKind};
use crate::session::shared::events::Local;
use crate::session::shared::stream::{Consumer, Pump};
use crate::session::shared::tabs::LockGuard;
use crate::session::shared::{new_id, now, transport_failure};
use crate::transport::{self, Stopper, Timeouts, TransportError};
use std::rc::Rc;

/// Split point `memory` (scripts/build-wasm.sh): whether an update is due and running it, and what
/// only it reaches (the machine, the forms, the reply collector, parsing, grounding, merging into
/// the graph), so that none of it is in the main wasm (the chunk is fetched by the first turn's
/// check, or by "Update memory now"); a failed fetch is [`MemoryError::Unavailable`].
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(memory, fallible, return_wrapper(let future = _; { future.await } -> Result<bool, MemoryError>)))]
fn update_memory_split<'a>(
    session: &'a Rc<Memory>,
    id: &'a str,
    overflow: bool,
    force: bool,
) -> Boxed<'a, bool, MemoryError> {
    Box::pin(session.update_memory_here(id, overflow, force))
}

/// What the driver holds while the machine runs.
struct Run<'a> {
    id: &'a str,
    /// The memory's server (the scheduler's key).
    server: String,
    /// The conversation's memory lock, while held.
    lock: Option<LockGuard>,
    /// Stops the request in flight (a chat turn, the user's cancel of a build).
    stopper: Stopper,
    pump: Option<Pump>,
    /// The endpoint's base URL of the request in flight (what a failure names).
    base_url: String,
    /// The memory endpoint's key (`EndpointProfile::key`): whose context a refusal for length
    /// tells (`Core::learn_window`).
    endpoint_key: String,
    /// Whether the scheduler runs this update (a live one): its contention is asked.
    live: bool,
    /// The error of a store (or other) failure that ended the machine.
    broken: Option<MemoryError>,
}

impl Memory {
    /// Runs the memory update when the engine says it is due (or always, with `force`). Serial per
    /// conversation; reports failures as notices and never changes memory on failure.
    pub(crate) async fn update_memory_if_due(
        self: &Rc<Self>,
        id: &str,
        overflow: bool,
        force: bool,
    ) {
        match self.update_memory(id, overflow, force).await {
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

    /// Returns whether the last update of the row landed. Never twice at once: one running in this
    /// tab refuses at once ([`MemoryError::Busy`]), and one tab at a time updates a conversation's
    /// memory (a Web Lock).
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
        let mut update = Update::new(id, overflow, force, Box::new(|| new_id("e")));
        let mut run = Run {
            id,
            server: self.memory_server(),
            lock: None,
            stopper: Stopper::new(),
            pump: None,
            base_url: String::new(),
            endpoint_key: String::new(),
            live: true,
            broken: None,
        };
        self.drive(&mut run, &mut update).await
    }

    /// Sends one chunk of a memory build and stores its result in one transaction (the new summary
    /// and graph, or, the previous memory untouched, the failure). Returns false, having written
    /// nothing of it, when `stopper` stopped it.
    pub(crate) async fn run_chunk(
        self: &Rc<Self>,
        chunk: Chunk,
        stopper: &Stopper,
    ) -> Result<bool, MemoryError> {
        let id = chunk.conversation_id.clone();
        let mut update = Update::chunk(chunk, now(), Box::new(|| new_id("e")));
        let mut run = Run {
            id: &id,
            server: String::new(),
            lock: None,
            stopper: stopper.clone(),
            pump: None,
            base_url: String::new(),
            endpoint_key: String::new(),
            live: false,
            broken: None,
        };
        self.drive(&mut run, &mut update).await
    }

    /// The driver loop: the machine's actions executed one by one, the pump feeding it in between.
    async fn drive(
        self: &Rc<Self>,
        run: &mut Run<'_>,
        update: &mut Update,
    ) -> Result<bool, MemoryError> {
        loop {
            while let Some(action) = update.poll_action() {
                if let Action::Done(finish) = action {
                    return finished(finish, run.broken.take());
                }
                if let Err(e) = self.execute(run, update, action).await {
                    run.broken = Some(e);
                    update.handle_broken();
                }
            }
            let mut feed = Feed {
                update: &mut *update,
                stopper: &run.stopper,
                base_url: &run.base_url,
                contended: || run.live && self.state.with(|s| s.schedule.is_contended(run.id)),
            };
            match run.pump.as_mut() {
                Some(pump) if feed.update.is_sending() => {
                    if !pump.step(&mut feed).await {
                        run.pump = None;
                    }
                }
                _ if feed.update.is_sending() => {
                    feed.handle_failure(TransportError::Aborted, now())
                }
                // Nothing to do and nothing in flight: it cannot progress.
                _ => {
                    run.broken = Some(MemoryError::Invalid(STALLED.into()));
                    update.handle_broken();
                }
            }
        }
    }

    /// Carries out one action of the machine (all but `Done`).
    async fn execute(
        self: &Rc<Self>,
        run: &mut Run<'_>,
        update: &mut Update,
        action: Action,
    ) -> Result<(), MemoryError> {
        let id = run.id;
        match action {
            Action::Check => update.handle_here(self.here(id)),
            Action::WaitForRunning => {
                self.state
                    .with(|s| s.schedule.handle_update_wanted(id, &run.server));
            }
            Action::ReadVersion => {
                let version = self.core.store.latest_summary(id).await?.map(|s| s.version);
                update.handle_version(version);
            }
            Action::Lock => {
                run.lock = None;
                let name = format!("memoire-memory:{}:{id}", self.core.store.name());
                run.lock = Some(crate::session::shared::tabs::lock(&name).await);
                update.handle_locked();
            }
            Action::Load { window } => self.load_into(run, update, window).await?,
            Action::Admit => {
                let admit = self
                    .state
                    .with(|s| s.schedule.handle_update_wanted(id, &run.server));
                update.handle_admit(admit);
            }
            Action::Started => self.started(run),
            Action::LoadGraph { endpoint_key } => {
                let graph = self.core.store.load_memory_graph(id, &endpoint_key).await?;
                update.handle_graph(graph);
            }
            Action::Send {
                request,
                protocol,
                base_url,
                ..
            } => {
                run.base_url = base_url;
                self.send(run, update, &request, protocol).await;
            }
            Action::Probe { request } => self.probe(run, update, &request).await,
            Action::Store(write) => {
                let stored = self.core.store.write_memory_update(id, &write).await?;
                update.handle_stored(stored);
            }
            Action::Changed => self.core.emit(Change::MemoryChanged(id.to_string())),
            Action::Facts {
                read,
                proposals,
                span,
                config,
            } => {
                // The facts about the user the model proposed, kept where the user's words hold
                // them; then what the user said in the span (a message another tab stored, or one
                // whose own take-in failed): already known sentences change nothing.
                self.user_proposed(id, &read, &proposals, &config)
                    .await
                    .ok();
                if let Some(span) = span {
                    self.user_span(&span, &config).await.ok();
                }
            }
            Action::Ended(end) => self.update_ended(run, update, &end),
            Action::Done(_) => {}
        }
        Ok(())
    }

    /// An update stopped running: the scheduler hears how it ended (and starts what waited), the
    /// lock is let go, and the machine hears whether the server is idle.
    fn update_ended(self: &Rc<Self>, run: &mut Run<'_>, update: &mut Update, end: &UpdateEnd) {
        let id = run.id;
        run.pump = None;
        self.state.with(|s| {
            s.stops.remove(id);
            s.running.remove(id);
            s.schedule.handle_update_ended(id, end);
        });
        self.core.emit(Change::MemoryUpdating {
            conversation_id: id.to_string(),
            running: false,
        });
        self.follow_schedule();
        run.lock = None;
        update.handle_ended(self.state.with(|s| s.schedule.is_idle(&run.server)));
    }

    /// Whether this conversation's memory is being updated in this tab.
    fn here(&self, id: &str) -> Here {
        if !self.state.with(|s| s.running.contains(id)) {
            Here::Free
        } else if self.state.with(|s| s.schedule.is_running(id)) {
            Here::Live
        } else {
            Here::Building
        }
    }

    /// Hands the machine what the update reads, keeping whose endpoint it goes to.
    async fn load_into(
        &self,
        run: &mut Run<'_>,
        update: &mut Update,
        window: usize,
    ) -> Result<(), MemoryError> {
        let loaded = self.load(run.id, window).await?;
        run.endpoint_key = loaded.endpoint.key();
        update.handle_loaded(loaded, now());
        Ok(())
    }

    /// What an update reads: the span in one transaction, kept to the branch on screen, with the
    /// settings in force and the chat prompt the server last read.
    async fn load(&self, id: &str, window: usize) -> Result<Loaded, MemoryError> {
        let span = (self.core.store)
            .load_memory_span(id, window, &branch_key(id))
            .await?;
        let conversation = span.conversation.ok_or(MemoryError::NoConversation)?;
        // Memory is made of the branch on screen, never of the alternatives off it (all of the
        // conversation is read only when it has alternatives).
        let anchor = anchor_of(span.branch);
        let messages = self.core.on_branch_at(id, anchor, span.messages).await?;
        let settings = self.core.settings.borrow().clone();
        let endpoint = settings.memory_endpoint_for(&conversation.memory_overrides);
        let last_prompt = self
            .core
            .prompts
            .borrow()
            .get(id)
            .and_then(|p| p.last.clone());
        // Fitted to what the chat's server holds (`config_for`) and to what memory's does.
        let config = self.core.config_for(&conversation);
        let config = match self.core.server_window(&endpoint) {
            Some(window) => fit(&config, window),
            None => config,
        };
        Ok(Loaded {
            config,
            slot: self.core.slot_use(&endpoint, Purpose::Memory),
            has_endpoint: settings.has_endpoint(),
            endpoint,
            conversation,
            previous: span.previous,
            messages,
            failure: span.failure,
            last_prompt,
        })
    }

    /// An admitted update runs: known to the scheduler and the UI as running, stoppable by a chat
    /// turn until it ends.
    fn started(&self, run: &mut Run<'_>) {
        run.stopper = Stopper::new();
        let stopper = run.stopper.clone();
        self.state.with(|s| {
            s.stops.insert(run.id.to_string(), stopper);
            s.running.insert(run.id.to_string());
        });
        self.core.emit(Change::MemoryUpdating {
            conversation_id: run.id.to_string(),
            running: true,
        });
    }

    /// Opens the update's request: its events are pumped into the machine, or its failure told.
    async fn send(
        &self,
        run: &mut Run<'_>,
        update: &mut Update,
        request: &HttpRequest,
        protocol: Protocol,
    ) {
        run.pump = None;
        match Pump::open(request, &run.stopper, protocol).await {
            Ok(pump) => {
                run.pump = Some(pump);
                update.handle_opened();
            }
            Err(e) => self.open_failed(run, update, e),
        }
    }

    /// Sends the probe (`engine::memory::update::Action::Probe`) and tells the machine the
    /// server's refusal, with its status and body, if it refused the request (a window it names is
    /// learned, as below); a chat turn that came meanwhile stopped it, told as for the request.
    async fn probe(&self, run: &Run<'_>, update: &mut Update, request: &HttpRequest) {
        let answer = transport::open(request, &run.stopper, Timeouts::default()).await;
        if run.live && self.state.with(|s| s.schedule.is_contended(run.id)) {
            update.handle_contended();
        }
        if run.stopper.is_stopped() {
            return update.handle_stopped();
        }
        let Err(e) = answer else {
            return update.handle_probe(None);
        };
        let TransportError::Http { status, body, .. } = &e else {
            return update.handle_probe(None);
        };
        let (status, body) = (*status, body.clone());
        let failure = transport_failure(e, &run.base_url, false);
        self.learn_from(run, &failure);
        update.handle_probe(Some((failure, status, body)));
    }

    /// A server that refused an update as longer than its context holds the next one to it.
    fn learn_from(&self, run: &Run<'_>, failure: &Failure) {
        if let FailureKind::ContextTooLong {
            window: Some(window),
            ..
        } = failure.kind
        {
            self.core.learn_window_of(&run.endpoint_key, window);
        }
    }

    /// The request got no body: stopped, or a failure (with the response, for a refused form).
    fn open_failed(&self, run: &Run<'_>, update: &mut Update, e: TransportError) {
        if run.live && self.state.with(|s| s.schedule.is_contended(run.id)) {
            update.handle_contended();
        }
        if run.stopper.is_stopped() {
            return update.handle_stopped();
        }
        let http = match &e {
            TransportError::Http { status, body, .. } => Some((*status, body.clone())),
            _ => None,
        };
        let failure = transport_failure(e, &run.base_url, false);
        self.learn_from(run, &failure);
        update.handle_open_failed(failure, http);
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
        self.state.with(|s| s.schedule.handle_chat_started(server));
        self.follow_schedule();
    }

    /// A chat turn is over: the updates that waited for its server run now (if still due).
    pub(crate) fn chat_ended(self: &Rc<Self>, server: &str) {
        self.state.with(|s| s.schedule.handle_chat_ended(server));
        self.follow_schedule();
    }

    /// Does what the scheduler asks: stops updates, starts the ones that waited.
    fn follow_schedule(self: &Rc<Self>) {
        loop {
            let action = self.state.with(|s| s.schedule.poll_action());
            match action {
                None => return,
                Some(Schedule::Stop { conversation_id }) => {
                    // Stopped outside the state: stopping may call back into the service.
                    let stop = self.state.with(|s| s.stops.get(&conversation_id).cloned());
                    if let Some(s) = stop {
                        s.stop();
                    }
                }
                Some(Schedule::Start { conversation_id }) => {
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
}

/// The machine stopped with nothing to do and nothing in flight (a bug, said as such).
const STALLED: &str =
    "The memory update stopped halfway; the previous memory is kept. Update the memory again.";

/// The caller's result of a finished update: whether it landed, or the error to give (`broken`: the
/// store's, when the store failed).
fn finished(finish: Finish, broken: Option<MemoryError>) -> Result<bool, MemoryError> {
    match finish {
        Finish::Landed => Ok(true),
        Finish::Nothing => Ok(false),
        Finish::Busy => Err(MemoryError::Busy),
        Finish::Deferred => Err(MemoryError::Deferred),
        Finish::NoEndpoint => Err(MemoryError::NoEndpoint),
        Finish::Invalid(reason) => Err(MemoryError::Invalid(reason)),
        // A repeat of the same failure is shown in the memory pane only, not as another banner.
        Finish::Failed {
            reason,
            repeated: true,
        } => Err(MemoryError::Quiet(reason)),
        Finish::Failed { reason, .. } => Err(MemoryError::Request(reason)),
        Finish::Broken => Err(broken.unwrap_or_else(|| MemoryError::Invalid(STALLED.into()))),
    }
}

/// The machine as the pump feeds it: a stop or a chat turn that came is told first.
struct Feed<'a, C: Fn() -> bool> {
    update: &'a mut Update,
    stopper: &'a Stopper,
    base_url: &'a str,
    contended: C,
}

impl<C: Fn() -> bool> Feed<'_, C> {
    /// Tells the machine a chat turn came or the request was stopped; true when stopped.
    fn stopped(&mut self) -> bool {
        if (self.contended)() {
            self.update.handle_contended();
        }
        if self.stopper.is_stopped() {
            self.update.handle_stopped();
            return true;
        }
        false
    }
}

impl<C: Fn() -> bool> Consumer for Feed<'_, C> {
    fn handle_event(&mut self, event: StreamEvent, _now: Millis) {
        if !self.stopped() {
            self.update.handle_event(event);
        }
    }

    fn handle_failure(&mut self, error: TransportError, _now: Millis) {
        if !self.stopped() {
            self.update
                .handle_failure(transport_failure(error, self.base_url, false));
        }
    }
}

pub(crate) fn memory_error(e: ReplyError) -> MemoryError {
    MemoryError::Invalid(e.to_string())
}

/// A small request's reply as the pump feeds it (the title's): the engine's collector, and the
/// text once the stream is over (`None` inside: it failed).
struct Collect {
    collector: ReplyCollector,
    outcome: Option<Option<(String, bool)>>,
}

impl Consumer for Collect {
    fn handle_event(&mut self, event: StreamEvent, _now: Millis) {
        if let Some(end) = self.collector.handle_event(event) {
            self.outcome = Some(end.ok().map(|text| (text, self.collector.was_cut())));
        }
    }

    fn handle_failure(&mut self, _error: TransportError, _now: Millis) {
        self.outcome = Some(None);
    }
}

/// Sends one small request in the two-section form (the title's) and collects the whole reply,
/// with whether the stream ended without a finish reason; `None` when it failed.
pub(crate) async fn complete(
    endpoint: &EndpointProfile,
    prompt: &Prompt,
    options: &RequestOptions,
) -> Option<(String, bool)> {
    let req = request::build(endpoint, prompt, options).ok()?;
    let mut pump = Pump::open(&req, &Stopper::new(), endpoint.protocol)
        .await
        .ok()?;
    let mut reply = Collect {
        collector: ReplyCollector::new(MemoryForm::Sections),
        outcome: None,
    };
    pump.run(&mut reply, |r| r.outcome.is_some()).await;
    reply.outcome.flatten()
}
