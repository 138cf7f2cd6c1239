//! A turn's rounds of tool calls: after each request the turn driver (`turn.rs`) hands the reply's
//! calls to `engine::tools::ToolLoop` and carries out its actions here: each call waits for the
//! user's Allow / Deny (`session/tools/`, unless the tool is always allowed), runs, and is saved on
//! the reply (store and `Change`, so other tabs and sync see it), until the loop asks for the next
//! request or ends. While calls wait or run the reply stays `streaming`, so a reload or a crash
//! finds it and marks its calls interrupted (`Store::mark_interrupted_streams`): never run twice.
//! Stop reaches every step (the turn's `Stopper` ends a wait for the user and cancels a running
//! MCP call).
//! Behind split point `turn` with the rest of the driver. Must not import `ui`.

use super::service::{Chat, ChatError};
use super::turn::Run;
use crate::engine::model::{MessageStatus, ToolCall};
use crate::engine::tabs::Change;
use crate::engine::tools::{
    always_allowed, always_key, apply_call, def_for, interrupt_pending, Approval, ToolAction,
    ToolEnd, ToolLoop,
};
use crate::engine::turn::{TurnOutcome, TurnStatus};
use crate::session::shared::error::ErrorKind;
use crate::session::shared::events::Local;
use std::collections::VecDeque;
use std::rc::Rc;

/// Where the loop's actions led.
enum Next {
    /// The next request, of this round.
    Round(u32),
    /// The turn is over.
    Done,
}

impl Chat {
    /// Hands the request's end (`outcome`) to the tool loop and carries out its actions:
    /// `Some(round)` when the next request is to go (`Turn::tool_round`), `None` when the turn is
    /// over. A turn that offered no tool has no loop: calls the model asked for anyway are never
    /// run (interrupted).
    pub(super) async fn after_request(
        self: &Rc<Self>,
        run: &mut Run<'_>,
        tools: &mut ToolLoop,
        outcome: &TurnOutcome,
    ) -> Result<Option<u32>, ChatError> {
        if run.defs.is_empty() {
            if interrupt_pending(&mut run.reply.meta.tool_calls) {
                self.write_reply(run).await?;
            }
            return Ok(None);
        }
        if run.stopper.is_stopped() {
            tools.handle_stop();
        } else if outcome.status == TurnStatus::Error {
            tools.handle_request_failed();
        } else {
            tools.handle_reply(outcome.round_text.clone(), outcome.round_calls.clone());
        }
        let status = outcome.status.message_status();
        let mut asks = VecDeque::new();
        loop {
            match self.carry_out(run, tools, &mut asks, status).await? {
                Some(Next::Round(round)) => return Ok(Some(round)),
                Some(Next::Done) => return Ok(None),
                None => {}
            }
            let Some(call) = asks.pop_front() else {
                if tools.is_finished() {
                    return Ok(None);
                }
                // Nothing left to answer and no request asked for: it cannot progress.
                tools.handle_stop();
                continue;
            };
            self.answer(run, tools, call).await?;
        }
    }

    /// Carries out the loop's actions queued: saves, cancels, the next request, the end. A call
    /// to ask about waits in `asks` (the saves of its round go first, so every call of it shows).
    async fn carry_out(
        &self,
        run: &mut Run<'_>,
        tools: &mut ToolLoop,
        asks: &mut VecDeque<ToolCall>,
        status: MessageStatus,
    ) -> Result<Option<Next>, ChatError> {
        while let Some(action) = tools.poll_action() {
            match action {
                ToolAction::Ask(call) => asks.push_back(call),
                ToolAction::Save(call) => {
                    apply_call(&mut run.reply.meta.tool_calls, &call);
                    // Calls unanswered: the reply is still being written (a reload finds it).
                    run.reply.status = if tools.is_finished() {
                        status
                    } else {
                        MessageStatus::Streaming
                    };
                    self.write_reply(run).await?;
                }
                ToolAction::Cancel { id } => self.tools.cancel(&id),
                ToolAction::Send { round, steps } => {
                    run.steps = steps;
                    return Ok(Some(Next::Round(round + 1)));
                }
                ToolAction::Finished(end) => {
                    self.ended(run, end, status).await?;
                    return Ok(Some(Next::Done));
                }
            }
        }
        Ok(None)
    }

    /// The loop ended: the reply takes its final status (interrupted when stopped), and an end
    /// that is not an answer is said.
    async fn ended(
        &self,
        run: &mut Run<'_>,
        end: ToolEnd,
        status: MessageStatus,
    ) -> Result<(), ChatError> {
        let status = match end {
            ToolEnd::Stopped => MessageStatus::Interrupted,
            _ => status,
        };
        if run.reply.status != status {
            run.reply.status = status;
            self.write_reply(run).await?;
        }
        if let Some(reason) = end.reason().filter(|_| end != ToolEnd::Stopped) {
            self.core.emit(Local::Error {
                conversation_id: Some(run.id.to_string()),
                message: reason,
                kind: ErrorKind::Request,
            });
        }
        Ok(())
    }

    /// Asks the user about `call` (unless its tool is always allowed) and runs it when allowed; a
    /// call of a tool not offered fails, as a result the model reads.
    async fn answer(
        &self,
        run: &mut Run<'_>,
        tools: &mut ToolLoop,
        call: ToolCall,
    ) -> Result<(), ChatError> {
        let Some(def) = def_for(&run.defs, &call.name).cloned() else {
            let why = format!("no tool named {} was offered.", call.name);
            tools.handle_tool_result(&call.id, Err(why));
            return Ok(());
        };
        let approval = match always_allowed(&run.always, &def) {
            true => Approval::Allow,
            false => self.tools.ask(&call.id, run.stopper).await,
        };
        if run.stopper.is_stopped() {
            tools.handle_stop();
            return Ok(());
        }
        match approval {
            Approval::Deny => return Ok(tools.handle_denied(&call.id)),
            Approval::Stop => return Ok(tools.handle_stop()),
            Approval::Always => {
                run.always.push(always_key(&def));
                if let Err(e) = self.tools.keep_always(&def).await {
                    self.core.emit(Local::Error {
                        conversation_id: Some(run.id.to_string()),
                        message: e.to_string(),
                        kind: ErrorKind::Other,
                    });
                }
            }
            Approval::Allow => {}
        }
        tools.handle_running(&call.id);
        let mut shown = VecDeque::new();
        // The call shows running while it runs.
        self.carry_out(run, tools, &mut shown, MessageStatus::Streaming)
            .await?;
        let conversation = run.ctx.conversation.clone();
        let result = (self.tools)
            .run(
                &conversation,
                &def,
                (&call.id, &call.arguments),
                run.stopper,
            )
            .await;
        if run.stopper.is_stopped() {
            tools.handle_stop();
        } else {
            tools.handle_tool_result(&call.id, result);
        }
        Ok(())
    }

    /// Writes the reply as it stands (a temporary chat's: kept in memory) and reports it.
    async fn write_reply(&self, run: &Run<'_>) -> Result<(), ChatError> {
        let r = &run.reply;
        if run.temporary {
            self.keep_temporary(r, false);
            return Ok(());
        }
        self.core
            .store
            .update_message(&r.id, &r.content, r.status, &r.meta)
            .await?;
        self.core.emit(Change::MessageProgress(r.clone()));
        Ok(())
    }
}
