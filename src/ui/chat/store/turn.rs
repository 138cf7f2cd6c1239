//! The turn store: which conversations have a turn in flight, and the actions that start, stop or
//! redo one (send, stop, retry, edit, regenerate, continue, the pager between alternatives,
//! delete, the answer to a tool call), each forwarded to the session for the conversation named. Its signal is private: views
//! read it through `Stores::streaming` (the open conversation's) and act through `ui/flow.rs`,
//! which names the open conversation. Must not import `crate::store` or `crate::transport`.

use crate::engine::model::Attachment;
use crate::engine::tools::Approval;
use crate::ui::backend::Backend;
use crate::ui::behaviour::when_idle;
use leptos::prelude::*;

/// The turns in flight and what is done to them. `Copy`, in the `Stores` context.
#[derive(Clone, Copy)]
pub struct TurnStore {
    backend: Backend,
    /// Conversations with a turn in flight.
    running: RwSignal<Vec<String>>,
}

impl TurnStore {
    /// No turn running.
    pub fn new(backend: Backend) -> Self {
        TurnStore {
            backend,
            running: RwSignal::new(Vec::new()),
        }
    }

    /// True while conversation `id` has a turn in flight (tracked).
    pub fn runs(&self, id: &str) -> bool {
        self.running.with(|l| l.iter().any(|x| x == id))
    }

    /// A turn started or ended (`TurnRunning`).
    pub fn set_running(&self, id: &str, running: bool) {
        self.running.update(|l| {
            l.retain(|x| x != id);
            if running {
                l.push(id.to_string());
            }
        });
    }

    /// The turn's chunk (split point `turn`) is fetched once the page is idle, so the first Send
    /// does not wait for it; a send before it is here waits for it (and fetches it again if this
    /// failed).
    pub fn preload_when_idle(&self) {
        let backend = self.backend;
        when_idle(
            move |_| {
                backend.run(|s| async move {
                    s.chat().preload_turn().await.ok();
                    Ok(())
                })
            },
            1000,
            100,
        );
    }

    /// Sends `text` with `files` in conversation `id` (the session clears its stored draft once the
    /// message itself is stored, then runs the turn).
    pub fn send(&self, id: String, text: String, files: Vec<Attachment>) {
        self.backend
            .run(move |s| async move { Ok(s.chat().send_with(&id, text, files).await?) });
    }

    /// Stops conversation `id`'s reply.
    pub fn stop(&self, id: &str) {
        if let Some(s) = self.backend.session() {
            s.chat().stop(id);
        }
    }

    /// The user's answer to tool call `call_id` (Allow, Deny, Always allow).
    pub fn answer_tool(&self, call_id: &str, answer: Approval) {
        if let Some(s) = self.backend.session() {
            s.tools().answer(call_id, answer);
        }
    }

    /// Re-sends conversation `id`'s last user turn.
    pub fn retry(&self, id: String) {
        self.backend.dismiss_error();
        self.backend
            .run(move |s| async move { Ok(s.chat().retry(&id).await?) });
    }

    /// Sends `text` in place of user message `message_id` of conversation `id`: a new branch (the
    /// old one stays a page away, see `Session::edit`).
    pub fn edit(&self, id: String, message_id: String, text: String) {
        self.backend.dismiss_error();
        self.backend
            .run(move |s| async move { Ok(s.chat().edit(&id, &message_id, text).await?) });
    }

    /// Asks the agent again for reply `reply_id`; the earlier reply stays as an alternative.
    pub fn regenerate(&self, id: String, reply_id: String) {
        self.backend.dismiss_error();
        self.backend
            .run(move |s| async move { Ok(s.chat().regenerate(&id, &reply_id).await?) });
    }

    /// Continue: asks for the rest of reply `reply_id`, which the reply cap cut; it grows in place.
    pub fn continue_reply(&self, id: String, reply_id: String) {
        self.backend.dismiss_error();
        self.backend
            .run(move |s| async move { Ok(s.chat().continue_reply(&id, &reply_id).await?) });
    }

    /// Shows another alternative of message `message_id` (the pager's ‹ and ›).
    pub fn show_alternative(&self, id: String, message_id: String) {
        self.backend
            .run(move |s| async move { Ok(s.chat().show_alternative(&id, &message_id).await?) });
    }

    /// Deletes message `message_id` of conversation `id` (the view asked first).
    pub fn delete_message(&self, id: String, message_id: String) {
        self.backend
            .run(move |s| async move { Ok(s.chat().delete_message(&id, &message_id).await?) });
    }
}
