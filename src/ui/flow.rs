//! What one user action means across the domains, as calls between store actions over the shared
//! [`Stores`]: opening, closing or starting a chat changes the memory shown, the record the library
//! holds, the banner and the phone's drawer; a message held back before it goes (`engine::send`)
//! says why, and opens Settings when no endpoint is set; an import's outcome goes to the memory's
//! build offer. The stores hold only their own state (none holds another: `tests/architecture.rs`);
//! `ui/events.rs` does the same for the session's events. Must not import `crate::store` or
//! `crate::transport`.

use crate::engine::keys::send_on_start;
use crate::engine::model::{Conversation, MemoryConfig};
use crate::engine::send::{may_send, SendRefusal, SendState};
use crate::session::ErrorKind;
use crate::ui::route::replace_route;
use crate::ui::stores::Stores;
use crate::ui::transfer::store::Export;
use leptos::prelude::untrack;

impl Stores {
    /// Opens conversation `id` (`focus`: a message to scroll to): its messages, then its memory;
    /// the library holds its record.
    pub fn open(&self, id: String, focus: Option<String>) {
        let memory = self.memory;
        if self.chat.open(id.clone(), focus, move || memory.reload()) {
            self.shown(Some(id.clone()));
        }
        self.library.hold_open(&id);
    }

    /// Closes the open conversation: the chat shows a new one.
    pub fn close(&self) {
        self.chat.close();
        self.shown(None);
    }

    /// New: an empty chat, inside `project` (`None`: outside any).
    pub fn new_chat(&self, project: Option<String>) {
        self.shell.close_drawer();
        if self.chat.new_conversation_in(project) {
            self.shown(None);
        }
    }

    /// Starts a temporary chat.
    pub fn start_temporary(&self) {
        self.shell.close_drawer();
        self.shown(None);
        self.chat.start_temporary();
    }

    /// A conversation was deleted (here or in another tab).
    pub fn removed(&self, id: &str) {
        self.library.removed(id);
        if self.chat.removed(id) {
            self.shown(None);
        }
    }

    /// Clears the open conversation's messages and memory (the composer asked first).
    pub fn clear(&self) {
        let memory = self.memory;
        self.chat.clear(move || memory.reload());
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

    /// What the Send button and Enter do with the draft: nothing while it is blank or a reply is
    /// being written; `/clear` is not sent (true: the composer asks first); anything else is sent,
    /// and nothing covers the chat once it goes (the phone's drawer closes).
    pub fn submit(&self) -> bool {
        let Some(text) = self.chat.submittable() else {
            return false;
        };
        self.shell.close_drawer();
        if text.trim() == "/clear" {
            return true;
        }
        self.send(text);
        false
    }

    /// Sends the composer text when it may go (`engine::send`), else says why and keeps it; the new
    /// chat's first message opens the conversation it creates.
    fn send(&self, text: String) {
        self.shell.dismiss_error();
        let state = SendState {
            online: self.shell.online_untracked(),
            has_endpoint: self.settings.with_settings_untracked(|s| s.has_endpoint()),
            attaching: self.chat.attaching_untracked(),
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
        let stores = *self;
        self.chat.send(text, move |id| {
            // The new chat's place in the history becomes the conversation's: Back goes to the
            // conversation before it, not to an empty chat.
            replace_route(&id);
            stores.open(id, None);
        });
    }

    /// The first screen is shown (the conversation to reopen, or the new chat): what was typed
    /// before stays in the composer (opening a conversation empties it otherwise), and a press of
    /// Enter in index.html's static first screen (`pending_send`) sends it now, once, as the Send
    /// button would (`engine::keys::send_on_start` says whether it may).
    pub fn first_screen_shown(&self, reopen: Option<String>, pending_send: bool) {
        let typed = self.chat.draft_untracked();
        match reopen {
            Some(id) => self.open(id, None),
            None => self.chat.show_new_chat(),
        }
        if !typed.is_empty() {
            self.chat.set_draft(typed.clone());
        }
        let endpoint = self.settings.with_settings_untracked(|s| s.has_endpoint());
        if pending_send && send_on_start(&typed, endpoint) {
            self.submit();
        }
        self.chat.preload_turn_when_idle();
    }

    /// Exports the open conversation or everything as a file download.
    pub fn export(&self, what: Export) {
        let open = untrack(|| self.open_conversation());
        self.transfer
            .export(what, self.chat.current_untracked(), open.map(|c| c.title));
    }

    /// Writes the import waiting for confirmation; then offers to build the memory of what it
    /// wrote.
    pub fn confirm_import(&self) {
        let memory = self.memory;
        self.transfer
            .confirm_import(move |ids| memory.offer_build(ids));
    }
}
