//! Driving one turn: load what the engine needs, let `engine::turn::Turn` decide, execute its
//! actions (send, save, store the handle), feed it the decoded stream, and report progress.
//! Also the context preview (the same assembly, without sending). Must not import `ui`.

use super::{
    new_id, now, transport_failure, Preview, PreviewDropped, PreviewSection, Session, SessionError,
    SessionEvent,
};
use crate::engine::assemble::{assemble, Assembly, AssemblyInput, DropReason, SectionKind};
use crate::engine::decode::{decoder_for, Decoder, StreamEvent};
use crate::engine::failure;
use crate::engine::memory::{retrieve, Graph};
use crate::engine::model::{
    Conversation, EndpointProfile, HistoryFormat, MemoryConfig, Message, MessageMeta,
    MessageStatus, Role, TurnPath,
};
use crate::engine::request::{self, RequestOptions};
use crate::engine::settings::history_load_limit;
use crate::engine::tokens::HeuristicEstimator;
use crate::engine::turn::{decide_path, Action, ConversationState, Turn, TurnStart, TurnStatus};
use crate::store::ConversationPatch;
use crate::transport::{self, BodyStream, Stopper, Timeouts, TransportError};
use std::rc::Rc;

/// Everything a prompt is built from, loaded for one conversation.
pub(crate) struct Context {
    pub conversation: Conversation,
    pub state: ConversationState,
    pub assembly: Assembly,
    pub endpoint: EndpointProfile,
    pub config: MemoryConfig,
}

impl Session {
    /// Loads the conversation, its recent history, summary and relevant entities, and assembles the
    /// prompt for `new_message` (which must already be in the history, or be the draft).
    pub(crate) async fn context_for(
        &self,
        id: &str,
        new_message: &Message,
    ) -> Result<Context, SessionError> {
        let conversation = self
            .store
            .get_conversation(id)
            .await?
            .ok_or(SessionError::NoConversation)?;
        let config = self.config_for(&conversation);
        let endpoint = self.settings.borrow().endpoint.clone();
        let messages = self
            .store
            .load_last(id, history_load_limit(&config))
            .await?;
        let summary = self.store.latest_summary(id).await?;
        let graph = Graph::new(self.entities_for(id).await?);
        let recent: Vec<&str> = messages
            .iter()
            .rev()
            .take(config.recent_messages)
            .map(|m| m.content.as_str())
            .chain(std::iter::once(new_message.content.as_str()))
            .collect();
        let ranked: Vec<_> = retrieve(&graph, &recent, now())
            .into_iter()
            .map(|r| r.node.clone())
            .collect();
        let estimator = self.calibration.borrow().estimator(
            HeuristicEstimator,
            &endpoint.key(),
            &endpoint.model,
        );
        let assembly = assemble(
            &AssemblyInput {
                system_prompt: &endpoint.system_prompt,
                summary: summary.as_ref(),
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

    /// Runs one turn for the stored user message `new_message_id`, then the memory update if due.
    pub(crate) async fn run_turn(
        self: &Rc<Self>,
        id: &str,
        new_message_id: &str,
    ) -> Result<(), SessionError> {
        let stopper = Stopper::new();
        self.inflight
            .borrow_mut()
            .insert(id.to_string(), stopper.clone());
        self.emit(SessionEvent::TurnRunning {
            conversation_id: id.to_string(),
            running: true,
        });
        let result = self.drive_turn(id, new_message_id, &stopper).await;
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
        });
        Ok(())
    }

    /// Returns whether the history overflowed the budget (a memory update is then due).
    async fn drive_turn(
        &self,
        id: &str,
        new_message_id: &str,
        stopper: &Stopper,
    ) -> Result<bool, SessionError> {
        let new_message = self
            .store
            .get_message(new_message_id)
            .await?
            .filter(|m| m.conversation_id == id && m.role == Role::User)
            .ok_or_else(|| SessionError::Invalid("The message to send is gone.".into()))?;
        let ctx = self.context_for(id, &new_message).await?;
        let reply = Message {
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
        };
        let reply = self.store.append_message(&reply).await?.message;
        self.emit(SessionEvent::MessageAdded(reply.clone()));
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
                            },
                        );
                        match transport::open(&req, stopper, Timeouts::default()).await {
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
        let ctx = self.context_for(id, &draft_msg).await?;
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
