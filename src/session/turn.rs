//! Driving one turn: load what the engine needs, let `engine::turn::Turn` decide, carry out its
//! actions one by one (`execute`: send, cancel, save the reply, store the handle, finish), feed it
//! the response through the session's one stream pump (`stream`), and report progress. A new
//! message whose conversation is cached is written while its request goes out ([`Begin::Ahead`]).
//! Also the context preview (the same assembly, without sending), and the cache loads behind both.
//! Must not import `ui`.

use super::cache::MemoryParts;
use super::stream::{Consumer, Pump};
use super::{
    new_id, now, transport_failure, Preview, PreviewDropped, PreviewSection, Session, SessionError,
    SessionEvent,
};
use crate::engine::assemble::{assemble, Assembly, AssemblyInput, DropReason, SectionKind};
use crate::engine::decode::StreamEvent;
use crate::engine::failure;
use crate::engine::format::{path_explanation, plural, system_prompt_detail};
use crate::engine::memory::{rank_for_prompt, Graph};
use crate::engine::model::{
    Conversation, EndpointProfile, EntityScope, HistoryFormat, MemoryConfig, MemoryOverrides,
    Message, MessageMeta, MessageStatus, Millis, Prompt, Role, TurnPath,
};
use crate::engine::request::{self, RequestOptions};
use crate::engine::settings::history_load_limit;
use crate::engine::tokens::HeuristicEstimator;
use crate::engine::turn::{path_for, Action, Turn, TurnOutcome, TurnStart, TurnStatus};
use crate::engine::window::HistoryWindow;
use crate::store::{ConversationPatch, StoreError};
use crate::transport::{Stopper, TransportError};
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::JsValue;

/// How a turn begins.
pub(crate) enum Begin {
    /// The user message (this id) is stored: a send on the ordinary path, a retry, an edit.
    Stored(String),
    /// A regeneration of reply `replaces`: the prompt is the branch up to it (its last user message
    /// is the one answered), and the new reply is an alternative of it.
    Regenerate { replaces: String },
    /// A new user message, not stored yet: it is written together with the reply placeholder, at
    /// the seqs the cached window predicts, while the request goes out (see [`Session::write_ahead`]).
    Ahead(Message),
}

/// A write started alongside the request; its outcome lands in `slot` before `done` resolves.
pub(crate) struct WriteAhead {
    done: js_sys::Promise,
    slot: Rc<RefCell<Option<Result<bool, StoreError>>>>,
}

/// The empty reply a turn streams into, after the last message of the branch the prompt was built
/// from.
fn reply_placeholder(id: &str, ctx: &Context) -> Message {
    Message {
        id: new_id("m"),
        conversation_id: id.to_string(),
        seq: 0,
        role: Role::Assistant,
        content: String::new(),
        status: MessageStatus::Streaming,
        created_at: now(),
        meta: MessageMeta {
            model: Some(ctx.endpoint.model.clone()),
            after: ctx.messages.last().map(|m| m.id.clone()),
            ..Default::default()
        },
    }
}

/// Everything a prompt is built from, loaded for one conversation.
pub(crate) struct Context {
    pub conversation: Conversation,
    /// The recent history the prompt was built from, ascending (with the new message when it was
    /// placed there unsaved).
    pub messages: Vec<Message>,
    pub assembly: Assembly,
    pub endpoint: EndpointProfile,
    pub config: MemoryConfig,
}

/// A turn in flight: what carrying out its actions needs.
struct Run<'a> {
    id: &'a str,
    ctx: Context,
    user: Message,
    /// The reply as last written.
    reply: Message,
    stopper: &'a Stopper,
    /// The write of `user` and `reply` that went out with the request ([`Begin::Ahead`]), until settled.
    ahead: Option<WriteAhead>,
    /// The response being read, if a request is in flight.
    pump: Option<Pump>,
}

/// The turn machine as the pump feeds it.
struct Feed<'a> {
    turn: &'a mut Turn,
    base_url: &'a str,
}

impl Consumer for Feed<'_> {
    fn handle_event(&mut self, event: StreamEvent, now: Millis) {
        self.turn.handle_event(event, now);
    }

    fn handle_failure(&mut self, error: TransportError, now: Millis) {
        if error == TransportError::Aborted {
            return self.turn.handle_stop(now);
        }
        let resuming = self.turn.path() == TurnPath::Resumed;
        let failure = transport_failure(error, self.base_url, resuming);
        self.turn.handle_failure(failure, now);
    }

    fn poll_timeout(&self) -> Option<Millis> {
        self.turn.poll_timeout()
    }

    fn handle_timeout(&mut self, now: Millis) {
        self.turn.handle_timeout(now);
    }
}

impl Session {
    /// The conversation, its recent history on the branch on screen (as much as its config asks
    /// for, deleted messages left out) and that config: from the cached window, else from the store
    /// (and then cached).
    pub(crate) async fn recent(
        &self,
        id: &str,
    ) -> Result<(Conversation, Vec<Message>, MemoryConfig), SessionError> {
        if let Some(w) = self.cache.borrow().window(id) {
            let config = self.config_for(w.conversation());
            let limit = history_load_limit(&config);
            if w.serves(limit) {
                let shown = w.last(limit).iter().filter(|m| !m.meta.deleted);
                return Ok((w.conversation().clone(), shown.cloned().collect(), config));
            }
        }
        let since = self.cache.borrow().generation();
        let conversation = self
            .store
            .get_conversation(id)
            .await?
            .ok_or(SessionError::NoConversation)?;
        let config = self.config_for(&conversation);
        let limit = history_load_limit(&config);
        let messages = self.branch_tail(id, limit).await?;
        let window = HistoryWindow::new(conversation.clone(), messages, limit);
        let messages = window.messages().to_vec();
        self.cache.borrow_mut().keep_window(since, window);
        Ok((conversation, messages, config))
    }

    /// The latest summary and the entities in scope: cached, else from the store (and then cached).
    pub(crate) async fn memory_parts(&self, id: &str) -> Result<Rc<MemoryParts>, SessionError> {
        if let Some(m) = self.cache.borrow().memory(id) {
            return Ok(m);
        }
        let since = self.cache.borrow().generation();
        let parts = Rc::new(MemoryParts {
            summary: self.store.latest_summary(id).await?,
            entities: self.entities_for(id).await?,
        });
        self.cache
            .borrow_mut()
            .keep_memory(since, id, parts.clone());
        Ok(parts)
    }

    /// Loads what the next prompt needs into the cache ahead of time (errors surface on use).
    pub(crate) async fn warm(&self, id: &str) {
        if self.recent(id).await.is_ok() {
            self.memory_parts(id).await.ok();
        }
    }

    /// The conversation, its recent history, summary and relevant entities, and the prompt assembled
    /// for `new_message`: a stored message already in the history, the draft (a preview), or, with
    /// `unsaved`, a new message not stored yet, which joins the history with the next seq.
    pub(crate) async fn context_for(
        &self,
        id: &str,
        new_message: &Message,
        unsaved: bool,
    ) -> Result<Context, SessionError> {
        self.context_from(id, new_message, unsaved, None).await
    }

    /// [`Session::context_for`], with the history given (`Some`: a branch other than the one on
    /// screen, cut to the config's load limit) instead of the recent history.
    async fn context_from(
        &self,
        id: &str,
        new_message: &Message,
        unsaved: bool,
        history: Option<Vec<Message>>,
    ) -> Result<Context, SessionError> {
        let (conversation, mut messages, config) = self.recent(id).await?;
        if let Some(mut h) = history {
            let excess = h.len().saturating_sub(history_load_limit(&config));
            h.drain(..excess);
            messages = h;
        }
        let placed;
        let new_message = if unsaved {
            let mut m = new_message.clone();
            // The next seq is unknown after a clear (seqs go on), so such a send takes the ordinary
            // path.
            m.seq = messages.last().ok_or(SessionError::Conflict)?.seq + 1;
            messages.push(m.clone());
            placed = m;
            &placed
        } else {
            new_message
        };
        let memory = self.memory_parts(id).await?;
        Ok(self.assemble_context(conversation, messages, config, new_message, &memory))
    }

    /// The prompt for `new_message` after `messages`, with `memory`, as the conversation's settings
    /// (its model, system prompt and memory config) say.
    fn assemble_context(
        &self,
        conversation: Conversation,
        messages: Vec<Message>,
        config: MemoryConfig,
        new_message: &Message,
        memory: &MemoryParts,
    ) -> Context {
        let endpoint = self
            .settings
            .borrow()
            .chat_endpoint_for(&conversation.memory_overrides);
        let graph = Graph::new(memory.entities.clone());
        let recent: Vec<&str> = messages
            .iter()
            .rev()
            .take(config.recent_messages)
            .map(|m| m.content.as_str())
            .chain(std::iter::once(new_message.content.as_str()))
            .collect();
        let ranked: Vec<_> = rank_for_prompt(&graph, &recent, now())
            .into_iter()
            .cloned()
            .collect();
        let estimator = self.calibration.borrow().estimator(
            HeuristicEstimator,
            &endpoint.key(),
            &endpoint.model,
        );
        let assembly = assemble(
            &AssemblyInput {
                system_prompt: &endpoint.system_prompt,
                summary: memory.summary.as_ref(),
                entities: &ranked,
                history: &messages,
                new_message,
                config: &config,
                protocol: endpoint.protocol,
            },
            &estimator,
        );
        Context {
            conversation,
            messages,
            assembly,
            endpoint,
            config,
        }
    }

    /// Runs one turn, then the memory update if due.
    pub(crate) async fn run_turn(
        self: &Rc<Self>,
        id: &str,
        begin: Begin,
    ) -> Result<(), SessionError> {
        let stopper = Stopper::new();
        self.inflight
            .borrow_mut()
            .insert(id.to_string(), stopper.clone());
        self.emit(SessionEvent::TurnRunning {
            conversation_id: id.to_string(),
            running: true,
        });
        // The chat goes first: memory updates on the same server stop, and wait until it is over.
        let server = self.chat_server();
        self.chat_started(&server);
        let result = self.drive_turn(id, begin, &stopper).await;
        self.chat_ended(&server);
        self.inflight.borrow_mut().remove(id);
        self.emit(SessionEvent::TurnRunning {
            conversation_id: id.to_string(),
            running: false,
        });
        let overflow = result?;
        let this = self.clone();
        let id = id.to_string();
        wasm_bindgen_futures::spawn_local(async move {
            this.update_memory_if_due(&id, overflow, false).await;
            // A memory update forgets the cached memory: have it ready again for the next prompt.
            this.warm(&id).await;
        });
        Ok(())
    }

    /// Returns whether the history overflowed the budget (a memory update is then due): the turn
    /// machine's actions executed one by one, the pump feeding it in between.
    async fn drive_turn(
        self: &Rc<Self>,
        id: &str,
        begin: Begin,
        stopper: &Stopper,
    ) -> Result<bool, SessionError> {
        let mut run = self.begin_turn(id, begin, stopper).await?;
        let mut turn = self.start_turn(&mut run).await?;
        loop {
            while let Some(action) = turn.poll_action() {
                if let Some(overflow) = self.execute(&mut run, &mut turn, action).await? {
                    return Ok(overflow);
                }
            }
            let mut feed = Feed {
                turn: &mut turn,
                base_url: &run.ctx.endpoint.base_url,
            };
            match run.pump.as_mut() {
                Some(pump) => {
                    if !pump.step(&mut feed).await {
                        run.pump = None;
                    }
                }
                // No request in flight and the turn is not finished: it cannot progress.
                None => turn.handle_failure(failure::aborted(), now()),
            }
        }
    }

    /// The user message, its context and the reply placeholder: stored ones, or written ahead.
    async fn begin_turn<'a>(
        self: &Rc<Self>,
        id: &'a str,
        begin: Begin,
        stopper: &'a Stopper,
    ) -> Result<Run<'a>, SessionError> {
        let (user, ctx, reply, ahead) = match begin {
            Begin::Stored(new_message_id) => {
                let cached = self
                    .cache
                    .borrow()
                    .window(id)
                    .and_then(|w| w.message(&new_message_id).cloned());
                let user = match cached {
                    Some(m) => Some(m),
                    None => self.store.get_message(&new_message_id).await?,
                }
                .filter(|m| m.conversation_id == id && m.role == Role::User)
                .ok_or_else(|| SessionError::Invalid("The message to send is gone.".into()))?;
                let ctx = self.context_for(id, &user, false).await?;
                let reply = reply_placeholder(id, &ctx);
                let reply = self.store.append_message(&reply).await?.message;
                self.emit(SessionEvent::MessageAdded(reply.clone()));
                (user, ctx, reply, None)
            }
            Begin::Regenerate { replaces } => {
                let (user, history) = self.branch_to(id, &replaces).await?;
                let ctx = self.context_from(id, &user, false, Some(history)).await?;
                let mut reply = reply_placeholder(id, &ctx);
                reply.meta.after = None;
                reply.meta.replaces = Some(replaces);
                let reply = self.store.append_message(&reply).await?.message;
                self.alternative_added(id, &reply).await?;
                (user, ctx, reply, None)
            }
            Begin::Ahead(user) => {
                let ctx = self.context_for(id, &user, true).await?;
                let user = ctx.messages.last().cloned().unwrap_or(user);
                let mut reply = reply_placeholder(id, &ctx);
                reply.seq = user.seq + 1;
                reply.meta.after = Some(user.id.clone());
                let write = self.write_ahead(&user, &reply, stopper);
                (user, ctx, reply, Some(write))
            }
        };
        Ok(Run {
            id,
            ctx,
            user,
            reply,
            stopper,
            ahead,
            pump: None,
        })
    }

    /// The turn machine for `run`; when it refuses to start, the reply says why.
    async fn start_turn(self: &Rc<Self>, run: &mut Run<'_>) -> Result<Turn, SessionError> {
        let started = Turn::start(TurnStart {
            conversation: &run.ctx.conversation,
            history: &run.ctx.messages,
            endpoint: &run.ctx.endpoint,
            new_message_id: &run.user.id,
            assembly: &run.ctx.assembly,
            reply_id: &run.reply.id,
            reply_seq: run.reply.seq,
        });
        let e = match started {
            Ok(turn) => return Ok(turn),
            Err(e) => e,
        };
        self.settle(run).await?;
        let msg = format!("Could not start the turn: {e}");
        let meta = MessageMeta {
            error: Some(msg.clone()),
            ..run.reply.meta.clone()
        };
        self.finish_message(&run.reply, "", MessageStatus::Error, meta)
            .await?;
        Err(SessionError::Invalid(msg))
    }

    /// Carries out one action of the turn machine: send, cancel, save the reply, store the handle,
    /// finish. `Some` once the turn is over (whether the history overflowed).
    async fn execute(
        self: &Rc<Self>,
        run: &mut Run<'_>,
        turn: &mut Turn,
        action: Action,
    ) -> Result<Option<bool>, SessionError> {
        match action {
            Action::SendRequest {
                prompt,
                previous_response_id,
                ..
            } => {
                self.send_request(run, turn, &prompt, previous_response_id)
                    .await?
            }
            Action::CancelRequest => {
                run.stopper.stop();
                run.pump = None;
            }
            Action::SaveReply(save) => {
                save.apply_to(&mut run.reply);
                let r = &run.reply;
                self.store
                    .update_message(&r.id, &r.content, r.status, &r.meta)
                    .await?;
                self.emit(SessionEvent::MessageProgress(r.clone()));
            }
            Action::StoreHandle {
                conversation_id,
                handle,
            } => {
                if conversation_id == run.id {
                    let patch = ConversationPatch {
                        remote_handle: Some(handle),
                        ..Default::default()
                    };
                    self.patch_conversation(run.id, &patch).await?;
                }
            }
            Action::Finished(outcome) => return self.finish_turn(run, outcome).await.map(Some),
        }
        Ok(None)
    }

    /// Opens the request; once it is out, the write started ahead of it is settled.
    async fn send_request(
        self: &Rc<Self>,
        run: &mut Run<'_>,
        turn: &mut Turn,
        prompt: &Prompt,
        previous_response_id: Option<String>,
    ) -> Result<(), SessionError> {
        run.pump = None;
        let options = RequestOptions {
            temperature: None,
            max_tokens: None,
            previous_response_id,
            stream: true,
            output: None,
        };
        let req = request::build(&run.ctx.endpoint, prompt, &options);
        let opened = Pump::open(&req, run.stopper, run.ctx.endpoint.protocol).await;
        self.settle(run).await?;
        match opened {
            Ok(pump) => run.pump = Some(pump),
            Err(e) => Feed {
                turn,
                base_url: &run.ctx.endpoint.base_url,
            }
            .handle_failure(e, now()),
        }
        Ok(())
    }

    /// Records how the turn ended (path, calibration) and reports it: a failed turn is an error, a
    /// reply cut off (rather than stopped) a banner; the partial reply is kept either way.
    async fn finish_turn(&self, run: &Run<'_>, outcome: TurnOutcome) -> Result<bool, SessionError> {
        let patch = ConversationPatch {
            last_path: Some(Some(outcome.path)),
            updated_at: Some(now()),
            ..Default::default()
        };
        self.patch_conversation(run.id, &patch).await?;
        if let Some(sample) = outcome.calibration {
            let endpoint = &run.ctx.endpoint;
            self.calibration.borrow_mut().observe(
                &endpoint.key(),
                &endpoint.model,
                sample.estimated,
                sample.reported,
            );
            self.save_calibration().await;
        }
        match (outcome.status, outcome.failure) {
            (TurnStatus::Error, Some(f)) => return Err(SessionError::Request(f.message)),
            // The turn still counts, so the memory update may follow.
            (TurnStatus::Interrupted, Some(f)) if f.kind != failure::FailureKind::Aborted => {
                self.emit(SessionEvent::Error {
                    conversation_id: Some(run.id.to_string()),
                    message: f.message,
                    kind: super::ErrorKind::Request,
                });
            }
            _ => {}
        }
        Ok(run.ctx.assembly.history_overflow)
    }

    /// Waits for the write started ahead of the request, if one was.
    async fn settle(self: &Rc<Self>, run: &mut Run<'_>) -> Result<(), SessionError> {
        match run.ahead.take() {
            Some(write) => {
                self.settle_ahead(run.id, write, &run.user, &run.reply)
                    .await
            }
            None => Ok(()),
        }
    }

    /// Starts writing `user` and `reply` (one transaction, at their seqs) without waiting for it. If
    /// the write fails or the conversation moved on, the request is stopped at once.
    fn write_ahead(
        self: &Rc<Self>,
        user: &Message,
        reply: &Message,
        stopper: &Stopper,
    ) -> WriteAhead {
        let slot: Rc<RefCell<Option<Result<bool, StoreError>>>> = Rc::default();
        let (this, user, reply, stopper, out) = (
            self.clone(),
            user.clone(),
            reply.clone(),
            stopper.clone(),
            slot.clone(),
        );
        let done = wasm_bindgen_futures::future_to_promise(async move {
            let r = this
                .store
                .append_turn(&user, &reply, user.seq.saturating_sub(1))
                .await;
            if r != Ok(true) {
                stopper.stop();
            }
            *out.borrow_mut() = Some(r);
            Ok(JsValue::UNDEFINED)
        });
        WriteAhead { done, slot }
    }

    /// Waits for a write started by [`Session::write_ahead`] and reports the two messages. When the
    /// conversation moved on, nothing was written: [`SessionError::Conflict`] (the caller sends again
    /// on the ordinary path).
    async fn settle_ahead(
        self: &Rc<Self>,
        id: &str,
        write: WriteAhead,
        user: &Message,
        reply: &Message,
    ) -> Result<(), SessionError> {
        wasm_bindgen_futures::JsFuture::from(write.done).await.ok();
        let outcome = write.slot.borrow_mut().take();
        match outcome {
            Some(Ok(true)) => {
                // In seq order: every view (and the cached window) places them one after the other.
                self.emit(SessionEvent::MessageAdded(user.clone()));
                self.emit(SessionEvent::MessageAdded(reply.clone()));
                self.after_user_message(id, user).await
            }
            Some(Ok(false)) => {
                self.cache.borrow_mut().forget(id);
                Err(SessionError::Conflict)
            }
            Some(Err(e)) => Err(e.into()),
            None => Err(SessionError::Conflict),
        }
    }

    /// Writes a final state of a message and reports it.
    pub(crate) async fn finish_message(
        &self,
        m: &Message,
        content: &str,
        status: MessageStatus,
        meta: MessageMeta,
    ) -> Result<(), SessionError> {
        self.store
            .update_message(&m.id, content, status, &meta)
            .await?;
        let mut m = m.clone();
        m.content = content.to_string();
        m.status = status;
        m.meta = meta;
        self.emit(SessionEvent::MessageProgress(m));
        Ok(())
    }

    /// What the next request would contain if `draft` were sent now.
    /// What the first message of a new chat (no conversation stored yet, `overrides`: what was
    /// picked for it) would send: the system prompt, the shared memory and the message.
    async fn preview_new_chat(
        &self,
        draft: Message,
        overrides: MemoryOverrides,
    ) -> Result<Preview, SessionError> {
        let t = now();
        let conversation = Conversation {
            id: String::new(),
            title: String::new(),
            title_is_custom: false,
            created_at: t,
            updated_at: t,
            message_count: 0,
            endpoint_profile_id: None,
            remote_handle: None,
            last_path: None,
            memory_overrides: overrides,
        };
        let config = self.config_for(&conversation);
        let memory = MemoryParts {
            summary: None,
            entities: self.store.load_entities(&EntityScope::Shared).await?,
        };
        let ctx = self.assemble_context(conversation, Vec::new(), config, &draft, &memory);
        Ok(preview_of(&ctx, TurnPath::Fresh))
    }

    /// What the next request of conversation `id` (empty: the new chat, with `overrides`) will
    /// contain, with `draft` as its message.
    pub async fn preview(
        &self,
        id: &str,
        draft: &str,
        overrides: MemoryOverrides,
    ) -> Result<Preview, SessionError> {
        let draft_msg = Message {
            id: "draft".into(),
            conversation_id: id.to_string(),
            seq: u64::MAX,
            role: Role::User,
            content: draft.to_string(),
            status: MessageStatus::Complete,
            created_at: now(),
            meta: Default::default(),
        };
        if id.is_empty() {
            return self.preview_new_chat(draft_msg, overrides).await;
        }
        let ctx = self.context_for(id, &draft_msg, false).await?;
        let path = path_for(
            ctx.conversation.remote_handle.as_ref(),
            &ctx.endpoint,
            &ctx.assembly,
        );
        Ok(preview_of(&ctx, path))
    }
}

fn preview_of(ctx: &Context, path: TurnPath) -> Preview {
    let a = &ctx.assembly;
    let path_explanation = path_explanation(path).to_string();
    let sections = a
        .sections
        .iter()
        .map(|s| {
            let (key, label) = match s.kind {
                SectionKind::System => ("system", "System prompt"),
                SectionKind::Summary => ("summary", "Summary"),
                SectionKind::Pending => ("pending", "Said, not yet in memory"),
                SectionKind::Entities => ("entities", "Entities"),
                SectionKind::History => ("history", "History"),
                SectionKind::NewMessage => ("new-message", "New message"),
            };
            let detail = match s.kind {
                SectionKind::History => plural(s.message_ids.len(), "message", "messages"),
                SectionKind::Entities => plural(s.entity_ids.len(), "entity", "entities"),
                SectionKind::System => system_prompt_detail(&ctx.conversation, &s.text),
                SectionKind::Summary if a.summary_shortened => "shortened to fit".into(),
                _ => String::new(),
            };
            PreviewSection {
                key: key.into(),
                label: label.into(),
                detail,
                tokens: s.tokens,
            }
        })
        .collect();
    let dropped = a
        .dropped
        .iter()
        .map(|d| PreviewDropped {
            seq: d.seq,
            reason: match d.reason {
                DropReason::CoveredBySummary => "covered by the summary",
                DropReason::OverBudget => "no room in the token budget",
                DropReason::ByteCap => "no room under the request size cap",
                DropReason::Errored => "a failed reply",
                DropReason::Empty => "empty",
                DropReason::AfterNewMessage => "a reply to an earlier attempt at this message",
            }
            .to_string(),
        })
        .collect();
    Preview {
        path,
        path_explanation,
        format: match ctx.config.history_format {
            HistoryFormat::Transcript => "transcript".into(),
            HistoryFormat::Messages => "messages".into(),
        },
        protocol: ctx.endpoint.protocol.as_str().into(),
        sections,
        dropped,
        total_tokens: a.total_tokens,
        budget: a.budget_tokens,
        over_budget: a.over_budget,
        request_bytes: a.total_bytes,
    }
}
