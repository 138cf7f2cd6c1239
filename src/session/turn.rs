//! Driving one turn: load what the engine needs, let `engine::turn::Turn` decide, execute its
//! actions (send, save, store the handle), feed it the decoded stream, and report progress. A new
//! message whose conversation is cached is written while its request goes out ([`Begin::Ahead`]).
//! Also the context preview (the same assembly, without sending), and the cache loads behind both.
//! Must not import `ui`.

use super::cache::MemoryParts;
use super::{
    new_id, now, transport_failure, Preview, PreviewDropped, PreviewSection, Session, SessionError,
    SessionEvent,
};
use crate::engine::assemble::{assemble, Assembly, AssemblyInput, DropReason, SectionKind};
use crate::engine::decode::{decoder_for, Decoder, StreamEvent};
use crate::engine::failure;
use crate::engine::memory::{rank_for_prompt, Graph};
use crate::engine::model::{
    Conversation, EndpointProfile, HistoryFormat, MemoryConfig, Message, MessageMeta,
    MessageStatus, Role, TurnPath,
};
use crate::engine::request::{self, RequestOptions};
use crate::engine::settings::history_load_limit;
use crate::engine::tokens::HeuristicEstimator;
use crate::engine::turn::{decide_path, Action, ConversationState, Turn, TurnStart, TurnStatus};
use crate::engine::window::HistoryWindow;
use crate::store::{ConversationPatch, StoreError};
use crate::transport::{self, BodyStream, Stopper, Timeouts, TransportError};
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::JsValue;

/// How a turn begins.
pub(crate) enum Begin {
    /// The user message (this id) is stored: a send on the ordinary path, a retry, an edit.
    Stored(String),
    /// A new user message, not stored yet: it is written together with the reply placeholder, at
    /// the seqs the cached window predicts, while the request goes out (see [`Session::write_ahead`]).
    Ahead(Message),
}

/// A write started alongside the request; its outcome lands in `slot` before `done` resolves.
pub(crate) struct WriteAhead {
    done: js_sys::Promise,
    slot: Rc<RefCell<Option<Result<bool, StoreError>>>>,
}

/// The empty reply a turn streams into.
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
            ..Default::default()
        },
    }
}

/// Everything a prompt is built from, loaded for one conversation.
pub(crate) struct Context {
    pub conversation: Conversation,
    pub state: ConversationState,
    pub assembly: Assembly,
    pub endpoint: EndpointProfile,
    pub config: MemoryConfig,
}

impl Session {
    /// The conversation, its recent history (as much as its config asks for) and that config: from
    /// the cached window, else from the store (and then cached).
    pub(crate) async fn recent(
        &self,
        id: &str,
    ) -> Result<(Conversation, Vec<Message>, MemoryConfig), SessionError> {
        if let Some(w) = self.cache.borrow().window(id) {
            let config = self.config_for(w.conversation());
            let limit = history_load_limit(&config);
            if w.serves(limit) {
                return Ok((w.conversation().clone(), w.last(limit).to_vec(), config));
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
        let messages = self.store.load_last(id, limit).await?;
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
        let (conversation, mut messages, config) = self.recent(id).await?;
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
        let endpoint = self.settings.borrow().endpoint.clone();
        let memory = self.memory_parts(id).await?;
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
        let state = ConversationState::new(conversation.clone(), messages);
        Ok(Context {
            conversation,
            state,
            assembly,
            endpoint,
            config,
        })
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
        let result = self.drive_turn(id, begin, &stopper).await;
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

    /// Returns whether the history overflowed the budget (a memory update is then due).
    async fn drive_turn(
        self: &Rc<Self>,
        id: &str,
        begin: Begin,
        stopper: &Stopper,
    ) -> Result<bool, SessionError> {
        let (new_message, ctx, reply, mut ahead) = match begin {
            Begin::Stored(new_message_id) => {
                let cached = self
                    .cache
                    .borrow()
                    .window(id)
                    .and_then(|w| w.message(&new_message_id).cloned());
                let new_message = match cached {
                    Some(m) => Some(m),
                    None => self.store.get_message(&new_message_id).await?,
                }
                .filter(|m| m.conversation_id == id && m.role == Role::User)
                .ok_or_else(|| SessionError::Invalid("The message to send is gone.".into()))?;
                let ctx = self.context_for(id, &new_message, false).await?;
                let reply = reply_placeholder(id, &ctx);
                let reply = self.store.append_message(&reply).await?.message;
                self.emit(SessionEvent::MessageAdded(reply.clone()));
                (new_message, ctx, reply, None)
            }
            Begin::Ahead(user) => {
                let ctx = self.context_for(id, &user, true).await?;
                let user = ctx.state.messages.last().cloned().unwrap_or(user);
                let mut reply = reply_placeholder(id, &ctx);
                reply.seq = user.seq + 1;
                let write = self.write_ahead(&user, &reply, stopper);
                (user, ctx, reply, Some(write))
            }
        };
        let new_message_id = new_message.id.as_str();
        let mut turn = match Turn::start(TurnStart {
            state: &ctx.state,
            endpoint: &ctx.endpoint,
            new_message_id,
            assembly: &ctx.assembly,
            reply_id: &reply.id,
            reply_seq: reply.seq,
            now: now(),
        }) {
            Ok(t) => t,
            Err(e) => {
                if let Some(write) = ahead.take() {
                    self.settle_ahead(id, write, &new_message, &reply).await?;
                }
                let msg = format!("Could not start the turn: {e}");
                self.finish_message(
                    &reply,
                    "",
                    MessageStatus::Error,
                    MessageMeta {
                        error: Some(msg.clone()),
                        ..reply.meta.clone()
                    },
                )
                .await?;
                return Err(SessionError::Invalid(msg));
            }
        };
        let protocol = ctx.endpoint.protocol;
        let mut body: Option<(BodyStream, Box<dyn Decoder>)> = None;
        let mut resuming = false;
        let mut reply_msg = reply.clone();
        loop {
            while let Some(action) = turn.poll_action() {
                match action {
                    Action::SendRequest {
                        prompt,
                        previous_response_id,
                        ..
                    } => {
                        body = None;
                        resuming = previous_response_id.is_some();
                        let req = request::build(
                            &ctx.endpoint,
                            &prompt,
                            &RequestOptions {
                                temperature: None,
                                max_tokens: None,
                                previous_response_id,
                                stream: true,
                                output: None,
                            },
                        );
                        let opened = transport::open(&req, stopper, Timeouts::default()).await;
                        if let Some(write) = ahead.take() {
                            self.settle_ahead(id, write, &new_message, &reply).await?;
                        }
                        match opened {
                            Ok(b) => body = Some((b, decoder_for(protocol))),
                            Err(TransportError::Aborted) => turn.handle_stop(now()),
                            Err(e) => turn.handle_failure(
                                transport_failure(e, &ctx.endpoint.base_url, resuming),
                                now(),
                            ),
                        }
                    }
                    Action::CancelRequest => {
                        stopper.stop();
                        body = None;
                    }
                    Action::SaveReply(save) => {
                        reply_msg.content = save.content;
                        reply_msg.status = save.status;
                        reply_msg.meta = MessageMeta {
                            tool_calls: save.tool_calls,
                            usage: save.usage,
                            error: save.error,
                            path: Some(save.path),
                            model: reply_msg.meta.model.clone(),
                        };
                        self.store
                            .update_message(
                                &reply_msg.id,
                                &reply_msg.content,
                                reply_msg.status,
                                &reply_msg.meta,
                            )
                            .await?;
                        self.emit(SessionEvent::MessageProgress(reply_msg.clone()));
                    }
                    Action::StoreHandle {
                        conversation_id,
                        handle,
                    } => {
                        if conversation_id == id {
                            let c = self
                                .store
                                .update_conversation(
                                    id,
                                    &ConversationPatch {
                                        remote_handle: Some(handle),
                                        ..Default::default()
                                    },
                                )
                                .await?;
                            self.emit(SessionEvent::ConversationChanged(c));
                        }
                    }
                    Action::Finished(outcome) => {
                        let c = self
                            .store
                            .update_conversation(
                                id,
                                &ConversationPatch {
                                    last_path: Some(Some(outcome.path)),
                                    updated_at: Some(now()),
                                    ..Default::default()
                                },
                            )
                            .await?;
                        self.emit(SessionEvent::ConversationChanged(c));
                        if let Some(sample) = outcome.calibration {
                            self.calibration.borrow_mut().observe(
                                &ctx.endpoint.key(),
                                &ctx.endpoint.model,
                                sample.estimated,
                                sample.reported,
                            );
                            self.save_calibration().await;
                        }
                        match (outcome.status, outcome.failure) {
                            (TurnStatus::Error, Some(f)) => {
                                return Err(SessionError::Request(f.message))
                            }
                            // Cut off (dropped, stalled, truncated) rather than stopped: the partial
                            // reply is kept, and the banner says what happened. The turn still
                            // counts, so the memory update may follow.
                            (TurnStatus::Interrupted, Some(f))
                                if f.kind != failure::FailureKind::Aborted =>
                            {
                                self.emit(SessionEvent::Error {
                                    conversation_id: Some(id.to_string()),
                                    message: f.message,
                                });
                            }
                            _ => {}
                        }
                        return Ok(ctx.assembly.history_overflow);
                    }
                }
            }
            if turn.is_finished() {
                return Ok(ctx.assembly.history_overflow);
            }
            let Some((stream, decoder)) = body.as_mut() else {
                // No request in flight and the turn is not finished: it cannot progress.
                turn.handle_failure(failure::aborted(), now());
                continue;
            };
            let mut eof = false;
            match stream.next_chunk().await {
                Ok(Some(bytes)) => decoder.handle_bytes(&bytes),
                Ok(None) => {
                    decoder.handle_eof();
                    eof = true;
                }
                Err(TransportError::Aborted) => {
                    turn.handle_stop(now());
                    continue;
                }
                Err(e) => {
                    turn.handle_failure(
                        transport_failure(e, &ctx.endpoint.base_url, resuming),
                        now(),
                    );
                    continue;
                }
            }
            let mut ended = false;
            while let Some(ev) = decoder.poll_event() {
                match ev {
                    StreamEvent::Error(e) => {
                        turn.handle_failure(failure::from_stream_error(&e, resuming), now());
                        ended = true;
                        break;
                    }
                    ev => turn.handle_event(ev, now()),
                }
            }
            if let Some(deadline) = turn.poll_timeout() {
                let t = now();
                if t >= deadline {
                    turn.handle_timeout(t);
                }
            }
            if eof && !ended && !turn.is_finished() {
                // The body ended and the decoder reported neither an end nor an error.
                turn.handle_failure(
                    failure::from_stream_error(
                        &crate::engine::decode::StreamError {
                            code: None,
                            message: "the reply ended without its end marker".into(),
                        },
                        resuming,
                    ),
                    now(),
                );
                ended = true;
            }
            if ended {
                body = None;
            }
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
    pub async fn preview(&self, id: &str, draft: &str) -> Result<Preview, SessionError> {
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
        let ctx = self.context_for(id, &draft_msg, false).await?;
        let previous_seq = ctx.state.last_seq();
        let has_prior = ctx.assembly.sections.iter().any(|s| {
            matches!(
                s.kind,
                SectionKind::Summary | SectionKind::Entities | SectionKind::History
            )
        });
        let path = decide_path(
            ctx.conversation.remote_handle.as_ref(),
            &ctx.endpoint,
            previous_seq,
            has_prior,
        );
        Ok(preview_of(&ctx, path))
    }
}

fn preview_of(ctx: &Context, path: TurnPath) -> Preview {
    let a = &ctx.assembly;
    let path_explanation = match path {
        TurnPath::Resumed => "Resume: the agent still holds this conversation, so only the new message is sent. If it has forgotten, Memoire re-sends everything below.".to_string(),
        TurnPath::Reinjected => "Re-inject: the agent does not hold this conversation, so Memoire sends the summary, memory and history below with the new message.".to_string(),
        TurnPath::Fresh => "Fresh: nothing came before, so only the system prompt and the new message are sent.".to_string(),
    };
    let sections = a
        .sections
        .iter()
        .map(|s| {
            let (key, label) = match s.kind {
                SectionKind::System => ("system", "System prompt"),
                SectionKind::Summary => ("summary", "Summary"),
                SectionKind::Entities => ("entities", "Entities"),
                SectionKind::History => ("history", "History"),
                SectionKind::NewMessage => ("new-message", "New message"),
            };
            let detail = match s.kind {
                SectionKind::History => format!("{} messages", s.message_ids.len()),
                SectionKind::Entities => format!("{} entities", s.entity_ids.len()),
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
