//! What one user action means across the domains, as calls between store actions over the shared
//! [`Stores`]: opening, closing or starting a chat changes the open conversation, the composer, the
//! message list, the memory shown, the record the library holds, the banner and the phone's
//! drawer; an action on the open conversation's turn names it; a message held back before it goes
//! (`engine::send`) says why, and opens Settings when no endpoint is set; an import's outcome goes
//! to the memory's build offer. The stores hold only their own state (none holds another:
//! `tests/architecture.rs`); `ui/events.rs` does the same for the session's events. Must not import
//! `crate::store` or `crate::transport`.

use crate::engine::keys::send_on_start;
use crate::engine::model::{Conversation, MemoryConfig};
use crate::engine::send::{may_send, SendRefusal, SendState, Submit};
use crate::engine::tools::Approval;
use crate::session::ErrorKind;
use crate::ui::behaviour::when_idle;
use crate::ui::chat::store::NEW_CHAT_DRAFT;
use crate::ui::route::{remember_open, replace_route, set_route};
use crate::ui::stores::Stores;
use crate::ui::transfer::store::Export;
use leptos::prelude::untrack;

impl Stores {
    /// Opens conversation `id` (`focus`: a message to scroll to): its messages, then its memory;
    /// the library holds its record.
    pub fn open(&self, id: String, focus: Option<String>) {
        let memory = self.memory;
        if self.open_messages(id.clone(), focus, move || memory.reload()) {
            self.shown(Some(id.clone()));
        }
        self.library.hold_open(&id);
    }

    /// Opens conversation `id` in the chat: its stored draft in the composer (the one before is
    /// saved first), its last page of messages (or the page around `focus`), then its preview;
    /// `drawn` runs once the messages are drawn (what other domains show of it follows then: their
    /// reads must not hold up the first paint). Returns whether another conversation was shown.
    fn open_messages(
        &self,
        id: String,
        focus: Option<String>,
        drawn: impl FnOnce() + 'static,
    ) -> bool {
        set_route(Some(&id));
        remember_open(Some(&id));
        let switched = !self.chat.is_current(&id);
        if switched {
            self.composer.save_draft();
            self.switch_to(Some(id.clone()));
            self.composer.load_draft(id.clone());
        }
        let stores = *self;
        self.messages.open(id, focus, move || {
            drawn();
            stores.refresh_preview();
        });
        switched
    }

    /// Shows conversation `id` (or the new chat) with nothing of the one before: the one reset of
    /// everything that belongs to the open conversation, used to open, close and lose one.
    fn switch_to(&self, id: Option<String>) {
        self.chat.show(id.clone());
        self.messages.show(id);
        // The composer belongs to the new conversation at once; its stored draft follows.
        self.composer.switch();
    }

    /// Closes the open conversation (its draft is saved first): the chat shows a new one.
    pub fn close(&self) {
        self.composer.save_draft();
        remember_open(None);
        self.switch_to(None);
        self.composer.load_draft(NEW_CHAT_DRAFT.to_string());
        self.refresh_preview();
        self.shown(None);
    }

    /// New: an empty chat inside `project` (`None`: outside any), with nothing stored until its
    /// first message (which creates the conversation in it). The conversation open before stays the
    /// one the app reopens, and a draft typed in the new chat is kept for the next New.
    pub fn new_chat(&self, project: Option<String>) {
        self.shell.close_drawer();
        let moved = self.chat.set_new_chat_project(project);
        if untrack(|| !self.chat.has_current()) {
            if moved {
                self.refresh_preview();
            }
            return;
        }
        self.composer.save_draft();
        self.switch_to(None);
        self.composer.load_draft(NEW_CHAT_DRAFT.to_string());
        // The model picked for the new chat before does not carry over (the preview follows).
        self.pick_model(None);
        self.shown(None);
    }

    /// Starts a temporary chat: never stored, no memory update; the app reopens the new chat after
    /// a reload.
    pub fn start_temporary(&self) {
        self.shell.close_drawer();
        self.shown(None);
        self.temporary_chat();
    }

    /// A temporary chat in place of the open conversation (the composer's draft is saved first).
    fn temporary_chat(&self) {
        self.composer.save_draft();
        set_route(None);
        remember_open(None);
        self.switch_to(None);
        let stores = *self;
        self.chat.start_temporary(move |id| {
            stores.messages.show(Some(id));
            stores.refresh_preview();
        });
    }

    /// A conversation was deleted (here or in another tab): if it was open, it is closed rather
    /// than shown as a ghost.
    pub fn removed(&self, id: &str) {
        self.library.removed(id);
        if self.chat.is_current(id) {
            self.switch_to(None);
            self.shown(None);
        }
    }

    /// Clears the open conversation's messages and memory (the composer asked first); the composer
    /// empties. A temporary chat's clearing is a new temporary chat (nothing of it is stored).
    pub fn clear(&self) {
        if untrack(|| self.chat.is_temporary()) {
            return self.temporary_chat();
        }
        self.composer.set_draft(String::new());
        let (stores, memory) = (*self, self.memory);
        self.chat.clear(move |id| {
            stores.open_messages(id, None, move || memory.reload());
        });
    }

    /// What the other domains show once the chat shows conversation `id` (or the new chat): its
    /// memory, and no banner about the one before.
    fn shown(&self, id: Option<String>) {
        self.memory.show(id);
        self.shell.dismiss_error();
    }

    /// The open conversation's record: as the library has it (a temporary chat: as the session
    /// holds it). Tracked.
    pub fn open_conversation(&self) -> Option<Conversation> {
        self.chat
            .temporary()
            .or_else(|| self.library.record(&self.chat.current()?))
    }

    /// The memory settings in force for the open conversation (its overrides on the global ones).
    pub fn memory_config(&self) -> MemoryConfig {
        let overrides = self
            .open_conversation()
            .map(|c| c.memory_overrides)
            .unwrap_or_default();
        self.settings.with_settings(|s| overrides.apply(&s.memory))
    }

    /// What the Send button and Enter do with the draft (`engine::send::on_submit`): nothing while it
    /// is blank or a reply is being written; `/clear` is not sent (true: the composer asks first);
    /// anything else is sent, and nothing covers the chat once it goes (the phone's drawer closes).
    pub fn submit(&self) -> bool {
        let submit = self.composer.on_submit(untrack(|| self.streaming()));
        if submit != Submit::Nothing {
            self.shell.close_drawer();
        }
        match submit {
            Submit::Nothing => false,
            Submit::AskToClear => true,
            Submit::Send => {
                self.send();
                false
            }
        }
    }

    /// Sends the composer's text and attachments when they may go (`engine::send`), else says why
    /// and keeps them; the new chat's first message opens the conversation it creates.
    fn send(&self) {
        self.shell.dismiss_error();
        let state = SendState {
            online: untrack(|| self.shell.online()),
            has_endpoint: untrack(|| self.settings.with_settings(|s| s.has_endpoint())),
            attaching: untrack(|| self.composer.attaching()),
        };
        if let Err(refusal) = may_send(state) {
            let kind = match refusal {
                SendRefusal::NoEndpoint => ErrorKind::Request,
                SendRefusal::Offline | SendRefusal::StillAttaching => ErrorKind::Other,
            };
            self.shell.fail(refusal.to_string(), kind);
            if refusal == SendRefusal::NoEndpoint {
                self.settings.open_dialog();
            }
            return;
        }
        let (text, files) = self.composer.take();
        let Some(id) = untrack(|| self.chat.current()) else {
            let stores = *self;
            return self.chat.start_conversation(text, files, move |id| {
                // The new chat's place in the history becomes the conversation's: Back goes to the
                // conversation before it, not to an empty chat.
                replace_route(&id);
                stores.open(id, None);
            });
        };
        if untrack(|| !self.chat.is_temporary()) && self.messages.leave_far_up() {
            // The window was far up: back to the latest messages, where the new one goes.
            self.open_messages(id.clone(), None, || {});
        }
        self.turn.send(id, text, files);
    }

    /// The first screen is shown (the conversation to reopen, or the new chat): what was typed
    /// before stays in the composer (opening a conversation empties it otherwise), and a press of
    /// Enter in index.html's static first screen (`pending_send`) sends it now, once, as the Send
    /// button would (`engine::keys::send_on_start` says whether it may).
    pub fn first_screen_shown(&self, reopen: Option<String>, pending_send: bool) {
        let typed = untrack(|| self.composer.draft());
        match reopen {
            Some(id) => self.open(id, None),
            None => {
                // The new chat: its stored draft, and its preview once the page is idle (the
                // inspector is not on the first screen).
                self.composer.load_draft(NEW_CHAT_DRAFT.to_string());
                let stores = *self;
                when_idle(move |_| stores.refresh_preview(), 500, 0);
            }
        }
        if !typed.is_empty() {
            self.composer.set_draft(typed.clone());
        }
        let endpoint = untrack(|| self.settings.with_settings(|s| s.has_endpoint()));
        if pending_send && send_on_start(&typed, endpoint) {
            self.submit();
        }
        self.turn.preload_when_idle();
    }

    /// True while the open conversation has a turn in flight (tracked).
    pub fn streaming(&self) -> bool {
        self.chat.current().is_some_and(|id| self.turn.runs(&id))
    }

    /// Recomputes what the open conversation's next request would contain with the composer's
    /// draft (the context inspector).
    pub fn refresh_preview(&self) {
        self.chat.refresh_preview(untrack(|| self.composer.draft()));
    }

    /// The model the open conversation (or the new chat) uses from its next turn; `None`: the one in
    /// Settings.
    pub fn pick_model(&self, model: Option<String>) {
        self.chat
            .pick_model(model, untrack(|| self.composer.draft()));
    }

    /// "Use memory about me" in the open conversation.
    pub fn use_user_memory(&self, on: bool) {
        self.chat
            .use_user_memory(on, untrack(|| self.composer.draft()));
    }

    /// Runs `act` on the open conversation's id, if one is open: the turn actions below.
    fn on_open(&self, act: impl FnOnce(String)) {
        if let Some(id) = untrack(|| self.chat.current()) {
            act(id);
        }
    }

    /// Stops the open conversation's reply.
    pub fn stop(&self) {
        self.on_open(|id| self.turn.stop(&id));
    }

    /// The user's answer to tool call `call_id`, waiting for it.
    pub fn answer_tool(&self, call_id: String, answer: Approval) {
        self.turn.answer_tool(&call_id, answer);
    }

    /// Re-sends the open conversation's last user turn.
    pub fn retry(&self) {
        self.on_open(|id| self.turn.retry(id));
    }

    /// Sends `text` in place of user message `message_id` (its editor closes): a new branch.
    pub fn edit(&self, message_id: String, text: String) {
        self.on_open(|id| {
            self.composer.cancel_edit();
            self.turn.edit(id, message_id, text);
        });
    }

    /// Asks the agent again for reply `reply_id`; the earlier reply stays as an alternative.
    pub fn regenerate(&self, reply_id: String) {
        self.on_open(|id| self.turn.regenerate(id, reply_id));
    }

    /// Continue: asks for the rest of reply `reply_id`, which the reply cap cut.
    pub fn continue_reply(&self, reply_id: String) {
        self.on_open(|id| self.turn.continue_reply(id, reply_id));
    }

    /// Shows another alternative of a message (the pager's ‹ and ›).
    pub fn show_alternative(&self, message_id: String) {
        self.on_open(|id| self.turn.show_alternative(id, message_id));
    }

    /// Deletes one message of the open conversation (the view asked first); its editor closes.
    pub fn delete_message(&self, message_id: String) {
        self.on_open(|id| {
            self.composer.deleted(&message_id);
            self.turn.delete_message(id, message_id);
        });
    }

    /// Exports the open conversation or everything as a file download.
    pub fn export(&self, what: Export) {
        let open = untrack(|| self.open_conversation());
        self.transfer
            .export(what, untrack(|| self.chat.current()), open.map(|c| c.title));
    }

    /// Writes the import waiting for confirmation; then offers to build the memory of what it
    /// wrote.
    pub fn confirm_import(&self) {
        let memory = self.memory;
        self.transfer
            .confirm_import(move |ids| memory.offer_build(ids));
    }
}
