//! Driving one turn: load what the engine needs, let `engine::turn::Turn` decide, carry out its
//! actions one by one (`execute`: send, cancel, save the reply, store the handle, finish), feed it
//! the response through the session's one stream pump (`stream`), and report progress. A new
//! message whose conversation is cached is written while its request goes out ([`Begin::Ahead`]).
//! The context preview (the same assembly, without sending) is `preview.rs`.
//! Must not import `ui`.

use super::service::{Begin, Chat, ChatError};
use crate::engine::assemble::{Assembly, AssemblyInput};
use crate::engine::context_window;
use crate::engine::decode::StreamEvent;
use crate::engine::failure::{self, Failure, FailureKind};
use crate::engine::memory::recall::Passage;
use crate::engine::memory::{rank_for_prompt, Graph};
use crate::engine::model::{
    Conversation, EndpointProfile, MemoryConfig, Message, MessageMeta, MessageStatus, Millis,
    Prompt, Role, TurnPath,
};
use crate::engine::model::{Project, UserFact};
use crate::engine::prefix::{assemble_held, Anchor, LastPrompt};
use crate::engine::project;
use crate::engine::request::{self, ToolRequest};
use crate::engine::settings::history_load_limit;
use crate::engine::slots::Purpose;
use crate::engine::tabs::Change;
use crate::engine::tokens::HeuristicEstimator;
use crate::engine::tools::{ToolDef, ToolLoop, ToolStep};
use crate::engine::turn::{failed_reply, Action, Turn, TurnOutcome, TurnStart, TurnStatus};
use crate::session::shared::cache::MemoryParts;
use crate::session::shared::error::Boxed;
use crate::session::shared::events::Local;
use crate::session::shared::stream::{Consumer, Pump};
use crate::session::shared::{new_id, now, transport_failure, Core};
use crate::store::{ConversationPatch, StoreError};
use crate::transport::{self, Stopper, Timeouts, TransportError};
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::JsValue;

/// Split point `turn` (scripts/build-wasm.sh): running a turn and what only it reaches (loading
/// and assembling the context, the turn machine, the request builders, the stream decoders) is the
/// turn chunk, fetched at idle after the first screen ([`Chat::preload_turn`]) or by the first send.
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(turn, fallible, return_wrapper(let future = _; { future.await } -> Result<(), ChatError>)))]
fn run_turn_split<'a>(chat: &'a Rc<Chat>, id: &'a str, begin: Begin) -> Boxed<'a, (), ChatError> {
    Box::pin(chat.run_turn_now(id, begin))
}

/// Split point `turn`: nothing, so calling it only fetches the chunk.
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(turn, fallible, return_wrapper(let ready = _; { ready.await } -> Result<(), ChatError>)))]
fn turn_ready_split() -> std::future::Ready<Result<(), ChatError>> {
    std::future::ready(Ok(()))
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

/// What a prompt carries of the user's memory across conversations, and the conversation's
/// project (its instructions, and the scope of the facts it may carry).
#[derive(Default, Clone)]
pub(crate) struct AboutUser {
    /// The conversation's project, while it exists (`engine::project::project_of`).
    pub project: Option<Project>,
    /// Every fact about the user, as stored (the assembly chooses).
    pub facts: Rc<Vec<UserFact>>,
    /// The passages of other conversations the new message refers back to, best first.
    pub recall: Vec<Passage>,
}

/// Everything a prompt is built from, loaded for one conversation.
pub(crate) struct Context {
    pub conversation: Conversation,
    /// The recent history the prompt was built from, ascending (with the new message when it was
    /// placed there unsaved).
    pub messages: Vec<Message>,
    pub assembly: Assembly,
    /// What the next chat prompt of the conversation holds to once this one went (`engine::prefix`).
    pub anchor: Anchor,
    pub endpoint: EndpointProfile,
    /// The conversation's memory config, fitted to what its server holds.
    pub config: MemoryConfig,
    /// How many tokens the server's context holds, when it said (`Core::server_window`).
    pub server_window: Option<u32>,
    /// The conversation's project, if any (the inspector names it).
    pub project: Option<Project>,
    /// What the assembly was given of the user's memory across conversations (the inspector shows
    /// where what it carries came from).
    pub about: AboutUser,
}

/// A turn in flight: what carrying out its actions needs.
pub(super) struct Run<'a> {
    pub(super) id: &'a str,
    pub(super) ctx: Context,
    pub(super) user: Message,
    /// The reply as last written.
    pub(super) reply: Message,
    pub(super) stopper: &'a Stopper,
    /// The write of `user` and `reply` that went out with the request ([`Begin::Ahead`]), until settled.
    pub(super) ahead: Option<WriteAhead>,
    /// The response being read, if a request is in flight.
    pub(super) pump: Option<Pump>,
    /// A temporary chat's turn: nothing of it is stored, even once the chat has ended.
    pub(super) temporary: bool,
    /// A continuation: the reply as it was before it (what the turn continues).
    pub(super) continues: Option<Message>,
    /// The tools the turn offers (none: no tool goes in its requests).
    pub(super) defs: Vec<ToolDef>,
    /// The rounds of tool calls so far, with their results (`engine::tools::ToolAction::Send`).
    pub(super) steps: Vec<ToolStep>,
    /// The tools the user always allows (`engine::tools::ToolPrefs::always`).
    pub(super) always: Vec<String>,
}

/// What starts a turn machine on `run`: its context, the new message and the reply.
fn turn_start<'r>(run: &'r Run<'_>) -> TurnStart<'r> {
    TurnStart {
        conversation: &run.ctx.conversation,
        history: &run.ctx.messages,
        endpoint: &run.ctx.endpoint,
        new_message_id: &run.user.id,
        assembly: &run.ctx.assembly,
        reply_id: &run.reply.id,
        reply_seq: run.reply.seq,
    }
}

/// The turn machine as the pump feeds it.
struct Feed<'a> {
    turn: &'a mut Turn,
    core: &'a Core,
    endpoint: &'a EndpointProfile,
}

impl Consumer for Feed<'_> {
    fn handle_event(&mut self, event: StreamEvent, now: Millis) {
        if matches!(event, StreamEvent::Timings(_)) {
            self.core.heard_timings(self.endpoint);
        }
        self.turn.handle_event(event, now);
    }

    fn handle_failure(&mut self, error: TransportError, now: Millis) {
        if error == TransportError::Aborted {
            return self.turn.handle_stop(now);
        }
        let resuming = self.turn.path() == TurnPath::Resumed;
        let failure = transport_failure(error, &self.endpoint.base_url, resuming);
        self.turn.handle_failure(failure, now);
    }

    fn poll_timeout(&self) -> Option<Millis> {
        self.turn.poll_timeout()
    }

    fn handle_timeout(&mut self, now: Millis) {
        self.turn.handle_timeout(now);
    }
}

impl Chat {
    /// The conversation, its recent history, summary and relevant entities, and the prompt assembled
    /// for `new_message`: a stored message already in the history, the draft (a preview), or, with
    /// `unsaved`, a new message not stored yet, which joins the history with the next seq.
    pub(crate) async fn context_for(
        &self,
        id: &str,
        new_message: &Message,
        unsaved: bool,
    ) -> Result<Context, ChatError> {
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
    ) -> Result<Context, ChatError> {
        let (conversation, mut messages, config) = self.core.recent(id).await?;
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
            m.seq = messages.last().ok_or(ChatError::Conflict)?.seq + 1;
            messages.push(m.clone());
            placed = m;
            &placed
        } else {
            new_message
        };
        let memory = self.core.memory_parts(id).await?;
        let about = self.about_user(&conversation, &config, new_message).await?;
        Ok(self.assemble_context(
            conversation,
            messages,
            config,
            new_message,
            (&memory, &about),
        ))
    }

    /// What a prompt of `conversation` for `new_message` may carry of the user's memory across
    /// conversations: nothing when memory about the user is off (in Settings or for the
    /// conversation), or its endpoint must not have it.
    pub(super) async fn about_user(
        &self,
        conversation: &Conversation,
        config: &MemoryConfig,
        new_message: &Message,
    ) -> Result<AboutUser, ChatError> {
        let private = self
            .core
            .settings
            .borrow()
            .chat_endpoint_for(&conversation.memory_overrides)
            .no_user_memory;
        let project = self.project_of(conversation).await?;
        if !config.user_memory || private {
            return Ok(AboutUser {
                project,
                ..Default::default()
            });
        }
        Ok(AboutUser {
            project,
            facts: self.core.user_facts().await?,
            recall: self
                .memory
                .recall_for(&conversation.id, &new_message.content)
                .await?,
        })
    }

    /// The project `conversation` is in, read from the store only when it names one.
    async fn project_of(&self, conversation: &Conversation) -> Result<Option<Project>, ChatError> {
        if conversation.memory_overrides.project.is_none() {
            return Ok(None);
        }
        let all = self.core.store.load_projects().await?;
        Ok(project::project_of(conversation, &all).cloned())
    }

    /// The prompt for `new_message` after `messages`, with `memory` (the conversation's memory, and
    /// what it carries of the user's memory across conversations), as the conversation's settings (its model, system prompt and
    /// memory config) say.
    pub(super) fn assemble_context(
        &self,
        conversation: Conversation,
        messages: Vec<Message>,
        config: MemoryConfig,
        new_message: &Message,
        (memory, about): (&MemoryParts, &AboutUser),
    ) -> Context {
        let mut endpoint = self
            .core
            .settings
            .borrow()
            .chat_endpoint_for(&conversation.memory_overrides);
        endpoint.system_prompt =
            project::system_prompt(&endpoint.system_prompt, about.project.as_ref());
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
        let estimator = self.core.calibration.borrow().estimator(
            HeuristicEstimator,
            &endpoint.key(),
            &endpoint.model,
        );
        let held = self
            .core
            .prompts
            .borrow()
            .get(&conversation.id)
            .and_then(|p| p.anchor.clone());
        let (assembly, anchor) = assemble_held(
            &AssemblyInput {
                system_prompt: &endpoint.system_prompt,
                summary: memory.summary.as_ref(),
                entities: &ranked,
                history: &messages,
                new_message,
                config: &config,
                protocol: endpoint.protocol,
                user_facts: &about.facts,
                project: about.project.as_ref().map(|p| p.id.as_str()),
                recall: &about.recall,
            },
            held.as_ref(),
            &estimator,
        );
        let server_window = self.core.server_window(&endpoint);
        Context {
            conversation,
            messages,
            assembly,
            anchor,
            server_window,
            endpoint,
            config,
            project: about.project.clone(),
            about: about.clone(),
        }
    }

    /// Runs one turn, then (in the background) the model-written title and the memory update if due.
    /// Behind split point `turn`: the first call waits for the chunk ([`Chat::preload_turn`] fetches
    /// it ahead); one that cannot be fetched is [`ChatError::Unavailable`], and nothing was sent.
    pub(crate) async fn run_turn(self: &Rc<Self>, id: &str, begin: Begin) -> Result<(), ChatError> {
        run_turn_split(self, id, begin).await
    }

    /// Fetches the turn chunk (split point `turn`: the turn, the prompt's assembly, the request
    /// builders and the stream decoders) ahead of the first send or preview; a no-op once it is here.
    pub async fn preload_turn(&self) -> Result<(), ChatError> {
        turn_ready_split().await
    }

    async fn run_turn_now(self: &Rc<Self>, id: &str, begin: Begin) -> Result<(), ChatError> {
        let stopper = Stopper::new();
        let kept = stopper.clone();
        self.state.with(|s| s.inflight.insert(id.to_string(), kept));
        self.core.emit(Local::TurnRunning {
            conversation_id: id.to_string(),
            running: true,
        });
        // The chat goes first: memory updates on the same server stop, and wait until it is over.
        let server = self.memory.chat_server();
        self.memory.chat_started(&server);
        let temporary = matches!(begin, Begin::Temporary(_));
        let result = self.drive_turn(id, begin, &stopper).await;
        self.memory.chat_ended(&server);
        self.state.with(|s| s.inflight.remove(id));
        self.core.emit(Local::TurnRunning {
            conversation_id: id.to_string(),
            running: false,
        });
        let overflow = match result {
            // Learned how much the server holds: the same turn, fitted to it.
            Err(ChatError::Refitted) => return self.retry(id).await,
            r => r?,
        };
        if temporary {
            // Nothing of it is stored, so no memory update could cover it.
            return Ok(());
        }
        let this = self.clone();
        let id = id.to_string();
        wasm_bindgen_futures::spawn_local(async move {
            // After the first reply, a title written by the model (when none was set by the user).
            this.memory.title_if_due(&id).await;
            this.memory.update_memory_if_due(&id, overflow, false).await;
            // A memory update forgets the cached memory: have it ready again for the next prompt.
            this.core.warm(&id).await;
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
    ) -> Result<bool, ChatError> {
        let mut run = self.begin_turn(id, begin, stopper).await?;
        let prefs = self.tools.prefs().await;
        let (conversation, config) = (&run.ctx.conversation, &run.ctx.config);
        run.defs = (self.tools)
            .defs_for(conversation, config, run.temporary, &prefs)
            .await;
        let mut tools = ToolLoop::new(crate::engine::tools::limits(prefs.max_steps));
        run.always = prefs.always;
        let mut turn = self.start_turn(&mut run).await?;
        loop {
            let outcome = self.drive_request(&mut run, &mut turn).await?;
            match self.after_request(&mut run, &mut tools, &outcome).await? {
                Some(round) => turn = self.tool_round(&mut run, round).await?,
                None => return self.finish_turn(&run, outcome).await,
            }
        }
    }

    /// Runs `turn`'s request to its end: the turn machine's actions executed one by one, the pump
    /// feeding it in between.
    async fn drive_request(
        self: &Rc<Self>,
        run: &mut Run<'_>,
        turn: &mut Turn,
    ) -> Result<TurnOutcome, ChatError> {
        loop {
            while let Some(action) = turn.poll_action() {
                if let Some(outcome) = self.execute(run, turn, action).await? {
                    return Ok(outcome);
                }
            }
            let mut feed = Feed {
                turn,
                core: &self.core,
                endpoint: &run.ctx.endpoint,
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
    ) -> Result<Run<'a>, ChatError> {
        let temporary = matches!(begin, Begin::Temporary(_));
        let mut continues = None;
        let (user, ctx, reply, ahead) = match begin {
            Begin::Stored(new_message_id) => {
                let user = self.stored_user(id, &new_message_id).await?;
                let ctx = self.context_for(id, &user, false).await?;
                let reply = reply_placeholder(id, &ctx);
                let reply = self.core.store.append_message(&reply).await?.message;
                self.core.emit(Change::MessageAdded(reply.clone()));
                (user, ctx, reply, None)
            }
            Begin::Retry { user, replaces } => {
                let (user, ctx, reply) = self.begin_retry(id, &user, &replaces).await?;
                (user, ctx, reply, None)
            }
            Begin::Regenerate { replaces } => {
                let (user, history) = self.branch_to(id, &replaces).await?;
                let ctx = self.context_from(id, &user, false, Some(history)).await?;
                let mut reply = reply_placeholder(id, &ctx);
                reply.meta.after = None;
                reply.meta.replaces = Some(replaces);
                let reply = self.core.store.append_message(&reply).await?.message;
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
            Begin::Continue { reply } => {
                let (user, ctx, written) = self.begin_continue(id, &reply).await?;
                continues = Some(written.clone());
                (user, ctx, written, None)
            }
            Begin::Temporary(user_id) => {
                let user = self.temporary_message(id, &user_id)?;
                let ctx = self.temporary_context(id, &user).await?;
                let mut reply = reply_placeholder(id, &ctx);
                let (seq, _) = crate::engine::temporary::next_meta(&ctx.messages);
                reply.seq = seq;
                self.keep_temporary(&reply, true);
                (user, ctx, reply, None)
            }
        };
        Ok(Run {
            temporary,
            id,
            ctx,
            user,
            reply,
            stopper,
            ahead,
            pump: None,
            continues,
            defs: Vec::new(),
            steps: Vec::new(),
            always: Vec::new(),
        })
    }

    /// A continuation of capped reply `reply_id`: the user message it answers, the context for it
    /// (the branch up to that message), and the reply, streaming again.
    async fn begin_continue(
        &self,
        id: &str,
        reply_id: &str,
    ) -> Result<(Message, Context, Message), ChatError> {
        let (user, mut history) = self.branch_to(id, reply_id).await?;
        let mut reply = history
            .pop()
            .filter(|m| m.id == reply_id)
            .ok_or_else(|| ChatError::Invalid("The reply to continue is gone.".into()))?;
        let at = history.iter().rposition(|m| m.id == user.id).unwrap_or(0);
        history.truncate(at + 1);
        let ctx = self.context_from(id, &user, false, Some(history)).await?;
        let written = reply.clone();
        reply.status = MessageStatus::Streaming;
        reply.meta.capped = false;
        self.core
            .store
            .update_message(&reply.id, &reply.content, reply.status, &reply.meta)
            .await?;
        self.core.emit(Change::MessageProgress(reply.clone()));
        Ok((user, ctx, written))
    }

    /// User message `message_id` of conversation `id`, from the cached window or the store.
    async fn stored_user(&self, id: &str, message_id: &str) -> Result<Message, ChatError> {
        let cached = self
            .core
            .cache
            .borrow()
            .window(id)
            .and_then(|w| w.message(message_id).cloned());
        match cached {
            Some(m) => Some(m),
            None => self.core.store.get_message(message_id).await?,
        }
        .filter(|m| m.conversation_id == id && m.role == Role::User)
        .ok_or_else(|| ChatError::Invalid("The message to send is gone.".into()))
    }

    /// A retry whose reply takes the place of failed reply `replaces` (`engine::turn::retry_plan`):
    /// the prompt is built from the history without it, and the new reply streams into its record.
    async fn begin_retry(
        &self,
        id: &str,
        user_id: &str,
        replaces: &str,
    ) -> Result<(Message, Context, Message), ChatError> {
        let user = self.stored_user(id, user_id).await?;
        let (_, mut history, _) = self.core.recent(id).await?;
        history.retain(|m| m.id != replaces);
        let ctx = self.context_from(id, &user, false, Some(history)).await?;
        let mut reply = self
            .core
            .store
            .get_message(replaces)
            .await?
            .filter(|m| m.conversation_id == id && failed_reply(m))
            .ok_or_else(|| ChatError::Invalid("The failed reply to replace is gone.".into()))?;
        reply.content.clear();
        reply.status = MessageStatus::Streaming;
        reply.meta.error = None;
        reply.meta.model = Some(ctx.endpoint.model.clone());
        self.core
            .store
            .update_message(&reply.id, &reply.content, reply.status, &reply.meta)
            .await?;
        self.core.emit(Change::MessageProgress(reply.clone()));
        Ok((user, ctx, reply))
    }

    /// The turn machine for `run`; when it refuses to start, the reply says why.
    async fn start_turn(self: &Rc<Self>, run: &mut Run<'_>) -> Result<Turn, ChatError> {
        let started = match &run.continues {
            Some(written) => Turn::continue_reply(turn_start(run), written),
            None => Turn::start(turn_start(run)),
        };
        self.started(run, started).await
    }

    /// The turn machine of tool round `round` (`engine::turn::Turn::tool_round`) on `run`'s reply.
    async fn tool_round(self: &Rc<Self>, run: &mut Run<'_>, round: u32) -> Result<Turn, ChatError> {
        let started = Turn::tool_round(turn_start(run), &run.reply, round);
        self.started(run, started).await
    }

    /// `started`, or, when the turn machine refused to start, the error the reply says.
    async fn started(
        self: &Rc<Self>,
        run: &mut Run<'_>,
        started: Result<Turn, crate::engine::turn::TurnError>,
    ) -> Result<Turn, ChatError> {
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
        // A continuation that could not start keeps what was written.
        let content = run.continues.as_ref().map_or("", |m| m.content.as_str());
        self.finish_message(
            &run.reply,
            content,
            MessageStatus::Error,
            meta,
            run.temporary,
        )
        .await?;
        Err(ChatError::Invalid(msg))
    }

    /// Carries out one action of the turn machine: send, cancel, save the reply, store the handle,
    /// finish. `Some` once the request is over (how it ended).
    async fn execute(
        self: &Rc<Self>,
        run: &mut Run<'_>,
        turn: &mut Turn,
        action: Action,
    ) -> Result<Option<TurnOutcome>, ChatError> {
        match action {
            Action::SendRequest {
                prompt,
                previous_response_id,
                ..
            } => {
                self.send_request(run, turn, &prompt, previous_response_id)
                    .await?
            }
            Action::Probe { prompt } => {
                let refusal = self.probe(run, &prompt).await;
                turn.handle_probe(refusal, now());
            }
            Action::CancelRequest => {
                run.stopper.stop();
                run.pump = None;
            }
            Action::SaveReply(save) => {
                save.apply_to(&mut run.reply);
                let r = &run.reply;
                if run.temporary {
                    self.keep_temporary(r, false);
                    return Ok(None);
                }
                self.core
                    .store
                    .update_message(&r.id, &r.content, r.status, &r.meta)
                    .await?;
                self.core.emit(Change::MessageProgress(r.clone()));
            }
            Action::StoreHandle {
                conversation_id,
                handle,
            } => {
                if run.temporary {
                    // A temporary chat left meanwhile is gone, and so is its handle.
                    self.change_temporary(run.id, |c| c.remote_handle = handle)
                        .ok();
                } else if conversation_id == run.id {
                    let patch = ConversationPatch {
                        remote_handle: Some(handle),
                        ..Default::default()
                    };
                    self.core.patch_conversation(run.id, &patch).await?;
                }
            }
            Action::Finished(outcome) => return Ok(Some(outcome)),
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
    ) -> Result<(), ChatError> {
        run.pump = None;
        let mut options =
            request::chat_options(request::reply_cap(&run.ctx.config), previous_response_id);
        options.slot = self.core.slot_use(&run.ctx.endpoint, Purpose::Chat);
        // The images' bytes are read from the store only now, for this request.
        let hashes = crate::engine::attach::image_hashes(prompt);
        let filled;
        let prompt = if hashes.is_empty() {
            prompt
        } else {
            let mut p = prompt.clone();
            crate::engine::attach::fill_images(&mut p, &self.image_bytes(&hashes).await?);
            filled = p;
            &filled
        };
        let effort = (self.core.settings.borrow()).reasoning_effort_for(&run.ctx.endpoint.model);
        let tools = ToolRequest {
            defs: &run.defs,
            steps: &run.steps,
        };
        let req =
            match request::build_with_tools(&run.ctx.endpoint, prompt, &options, effort, tools) {
                Ok(req) => req,
                Err(refused) => {
                    self.settle(run).await?;
                    turn.handle_failure(failure::key_refused(&refused), now());
                    return Ok(());
                }
            };
        turn.handle_sent(now());
        self.remember_prompt(run, prompt);
        let opened = Pump::open(&req, run.stopper, run.ctx.endpoint.protocol).await;
        self.settle(run).await?;
        match opened {
            Ok(pump) => run.pump = Some(pump),
            Err(e) => Feed {
                turn,
                core: &self.core,
                endpoint: &run.ctx.endpoint,
            }
            .handle_failure(e, now()),
        }
        Ok(())
    }

    /// Sends `prompt` again not streamed and for one token of reply (`engine::turn::Action::Probe`):
    /// the server's refusal, if it refuses it.
    async fn probe(&self, run: &Run<'_>, prompt: &Prompt) -> Option<Failure> {
        let mut options = request::chat_options(1, None);
        options.stream = false;
        options.slot = self.core.slot_use(&run.ctx.endpoint, Purpose::Chat);
        let hashes = crate::engine::attach::image_hashes(prompt);
        let mut prompt = prompt.clone();
        if !hashes.is_empty() {
            let bytes = self.image_bytes(&hashes).await.ok()?;
            crate::engine::attach::fill_images(&mut prompt, &bytes);
        }
        let req = request::build(&run.ctx.endpoint, &prompt, &options).ok()?;
        match transport::open(&req, run.stopper, Timeouts::default()).await {
            Err(e @ TransportError::Http { .. }) => {
                Some(transport_failure(e, &run.ctx.endpoint.base_url, false))
            }
            _ => None,
        }
    }

    /// Keeps what the conversation's next prompts build on (`engine::prefix`): its anchor, and the
    /// prompt that went with the reply it is for, when it is the whole assembled prompt (not a
    /// resumed session's new message alone).
    fn remember_prompt(&self, run: &Run<'_>, prompt: &Prompt) {
        let mut prompts = self.core.prompts.borrow_mut();
        let kept = prompts.entry(run.id.to_string()).or_default();
        kept.anchor = Some(run.ctx.anchor.clone());
        kept.last = (prompt == &run.ctx.assembly.prompt).then(|| LastPrompt {
            endpoint_key: run.ctx.endpoint.key(),
            prompt: prompt.clone(),
            tokens: run.ctx.assembly.total_tokens,
            reply_id: run.reply.id.clone(),
        });
    }

    /// Records how the turn ended (path, calibration) and reports it: a failed turn is an error, a
    /// reply cut off (rather than stopped) a banner; the partial reply is kept either way.
    async fn finish_turn(&self, run: &Run<'_>, outcome: TurnOutcome) -> Result<bool, ChatError> {
        if run.temporary {
            self.change_temporary(run.id, |c| c.last_path = Some(outcome.path))
                .ok();
        } else {
            let patch = ConversationPatch {
                last_path: Some(Some(outcome.path)),
                updated_at: Some(now()),
                ..Default::default()
            };
            self.core.patch_conversation(run.id, &patch).await?;
        }
        if let Some(sample) = outcome.calibration {
            let endpoint = &run.ctx.endpoint;
            self.core.calibration.borrow_mut().observe(
                &endpoint.key(),
                &endpoint.model,
                sample.estimated,
                sample.reported,
            );
            self.core.save_calibration().await;
        }
        match (outcome.status, outcome.failure) {
            (TurnStatus::Error, Some(f)) => return Err(self.refused(run, f).await),
            // The turn still counts, so the memory update may follow.
            (TurnStatus::Interrupted, Some(f)) if f.kind != FailureKind::Aborted => {
                self.core.emit(Local::Error {
                    conversation_id: Some(run.id.to_string()),
                    message: f.text(),
                    kind: crate::session::shared::error::ErrorKind::Request,
                });
            }
            _ => {}
        }
        Ok(run.ctx.assembly.history_overflow)
    }

    /// The error a failed turn ends with. A server that refused the prompt as longer than its
    /// context, saying how long it may be, is held to that from now on (and the count it gave
    /// calibrates the estimate); when that makes the prompt smaller, the turn goes again at once
    /// ([`ChatError::Refitted`], when `engine::context_window::refit` says so).
    ///
    /// A server that refused the tools the request offered is offered none from now on for this
    /// model, and the turn goes again at once without them (`ChatError::Refitted` too).
    async fn refused(&self, run: &Run<'_>, f: Failure) -> ChatError {
        if f.kind == FailureKind::ToolsRefused && !run.defs.is_empty() {
            return match self.tools.refuse(&run.ctx.endpoint).await {
                Ok(()) => ChatError::Refitted,
                Err(_) => ChatError::Request(f.text()),
            };
        }
        let FailureKind::ContextTooLong {
            window,
            prompt_tokens,
        } = f.kind
        else {
            return ChatError::Request(f.text());
        };
        let endpoint = &run.ctx.endpoint;
        if let Some(reported) = prompt_tokens {
            let estimated = run.ctx.assembly.total_tokens;
            (self.core.calibration.borrow_mut()).observe(
                &endpoint.key(),
                &endpoint.model,
                estimated,
                reported,
            );
            self.core.save_calibration().await;
        }
        let Some(window) = window else {
            return ChatError::Request(f.text());
        };
        self.core.learn_window(endpoint, window);
        if context_window::refit(&run.ctx.config, window, run.continues.is_some()) {
            ChatError::Refitted
        } else {
            ChatError::Request(f.text())
        }
    }

    /// Waits for the write started ahead of the request, if one was.
    async fn settle(self: &Rc<Self>, run: &mut Run<'_>) -> Result<(), ChatError> {
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
                .core
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
    /// conversation moved on, nothing was written: [`ChatError::Conflict`] (the caller sends again
    /// on the ordinary path).
    async fn settle_ahead(
        self: &Rc<Self>,
        id: &str,
        write: WriteAhead,
        user: &Message,
        reply: &Message,
    ) -> Result<(), ChatError> {
        wasm_bindgen_futures::JsFuture::from(write.done).await.ok();
        let outcome = write.slot.borrow_mut().take();
        match outcome {
            Some(Ok(true)) => {
                // In seq order: every view (and the cached window) places them one after the other.
                self.core.emit(Change::MessageAdded(user.clone()));
                self.core.emit(Change::MessageAdded(reply.clone()));
                self.after_user_message(id, user).await
            }
            Some(Ok(false)) => {
                self.core.cache.borrow_mut().forget(id);
                Err(ChatError::Conflict)
            }
            Some(Err(e)) => Err(e.into()),
            None => Err(ChatError::Conflict),
        }
    }

    /// Writes a final state of a message (of a `temporary` chat: keeps it) and reports it.
    pub(crate) async fn finish_message(
        &self,
        m: &Message,
        content: &str,
        status: MessageStatus,
        meta: MessageMeta,
        temporary: bool,
    ) -> Result<(), ChatError> {
        let mut m = m.clone();
        m.content = content.to_string();
        m.status = status;
        m.meta = meta;
        if temporary {
            self.keep_temporary(&m, false);
            return Ok(());
        }
        self.core
            .store
            .update_message(&m.id, &m.content, status, &m.meta)
            .await?;
        self.core.emit(Change::MessageProgress(m));
        Ok(())
    }
}
