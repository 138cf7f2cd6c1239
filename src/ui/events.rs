//! Session events into the UI stores: each `SessionEvent` goes to the store(s) that own what it
//! changes, through their event handlers; what one change means for another domain (the open
//! conversation's memory changed: reload it and the preview) is a call between store actions.
//! Streaming progress is batched to animation frames: many chunks within one frame cost one render.
//! Must not import `crate::store` or `crate::transport`.

use crate::engine::model::{Conversation, Message, MessageStatus};
use crate::engine::settings::Settings;
use crate::engine::tabs::Change;
use crate::session::{Local, SessionEvent};
use crate::ui::stores::Stores;
use leptos::prelude::*;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// Dispatches session events to the stores.
#[derive(Clone)]
pub struct Events {
    stores: Stores,
    /// Streaming progress waiting for the next animation frame, by message id.
    pending: Rc<RefCell<HashMap<String, Message>>>,
    scheduled: Rc<RefCell<bool>>,
}

impl Events {
    /// A dispatcher over these stores.
    pub fn new(stores: Stores) -> Self {
        Events {
            stores,
            pending: Rc::default(),
            scheduled: Rc::default(),
        }
    }

    /// Applies one event: every variant is named, so a new one does not compile until it goes
    /// somewhere.
    pub fn apply(&self, event: SessionEvent) {
        match event {
            SessionEvent::Shared(change) => self.shared(change),
            SessionEvent::Local(local) => self.local(local),
        }
    }

    /// A change of stored data, this tab's or another's.
    fn shared(&self, change: Change) {
        let Stores {
            chat,
            composer,
            messages,
            memory,
            ..
        } = self.stores;
        let stores = self.stores;
        match change {
            Change::Conversation(c) => self.conversations_changed(vec![c]),
            Change::Conversations(cs) => self.conversations_changed(cs),
            Change::ConversationRemoved(id) => self.stores.removed(&id),
            Change::MessageAdded(m) => self.message_added(m),
            Change::MessageProgress(m) => self.progress(m),
            Change::MessagesCleared(id) => messages.cleared(&id),
            Change::BranchChanged(id) if chat.is_current(&id) => {
                composer.retry_thumbnails();
                messages.show_branch(id);
                stores.refresh_preview();
            }
            Change::BranchChanged(_) => {}
            Change::MemoryUpdating {
                conversation_id: id,
                running,
            } => memory.set_updating(&id, running),
            Change::MemoryChanged(id) if chat.is_current(&id) => {
                memory.reload();
                stores.refresh_preview();
            }
            Change::MemoryChanged(_) => {}
            Change::Settings(s) => self.settings_changed(*s),
            Change::UserFacts => self.user_facts_changed(),
            Change::Projects => {
                self.stores.projects.reload();
                stores.refresh_preview();
            }
        }
    }

    /// This tab's own news.
    fn local(&self, local: Local) {
        let Stores {
            shell,
            chat,
            memory,
            sync,
            transfer,
            ..
        } = self.stores;
        match local {
            Local::TurnRunning {
                conversation_id: id,
                running,
            } => {
                self.stores.turn.set_running(&id, running);
                if !running && chat.is_current(&id) {
                    self.stores.refresh_preview();
                }
            }
            Local::Error {
                conversation_id,
                message,
                kind,
            } => {
                if conversation_id
                    .as_deref()
                    .is_none_or(|c| chat.is_current(c))
                {
                    shell.fail(message, kind);
                }
            }
            Local::MemoryBuild(b) => memory.build_reported(b),
            Local::Notice(text) => shell.notify(text),
            Local::SyncStatus(v) => sync.reported(v),
            Local::ImportProgress(p) => transfer.progress(p),
        }
    }

    /// A stored message: shown where it belongs. Stored messages this view never heard of (another
    /// tab whose events did not arrive): the window is reloaded.
    fn message_added(&self, m: Message) {
        self.flush();
        if self.stores.messages.take_message(&m) {
            self.stores.open(m.conversation_id, None);
        }
    }

    /// The facts about the user changed (here or in another tab): the Memory page reads them again,
    /// and the next request is previewed with them.
    fn user_facts_changed(&self) {
        self.stores.about.reload();
        self.stores.refresh_preview();
    }

    /// Saved settings (here or in another tab): the settings store takes them, and the open
    /// conversation's next request is previewed with them.
    fn settings_changed(&self, settings: Settings) {
        let chat = self.stores.chat;
        self.stores.settings.changed(settings);
        if untrack(|| chat.has_current()) {
            self.stores.refresh_preview();
        }
    }

    /// Conversations stored or changed (here or in another tab): the list takes them in one update,
    /// and the open one's next request is previewed again.
    fn conversations_changed(&self, cs: Vec<Conversation>) {
        let chat = self.stores.chat;
        let current = cs.iter().any(|c| chat.is_current(&c.id));
        self.stores.library.changed(cs);
        if current {
            self.stores.refresh_preview();
        }
    }

    /// A streaming reply's growth waits for the next frame (coalesced); a settled one applies now.
    fn progress(&self, m: Message) {
        if m.status == MessageStatus::Streaming {
            self.pending.borrow_mut().insert(m.id.clone(), m);
            self.schedule();
        } else {
            self.pending.borrow_mut().remove(&m.id);
            self.stores.messages.take_message(&m);
        }
    }

    fn schedule(&self) {
        if *self.scheduled.borrow() {
            return;
        }
        *self.scheduled.borrow_mut() = true;
        let this = self.clone();
        request_animation_frame(move || {
            *this.scheduled.borrow_mut() = false;
            this.flush();
        });
    }

    fn flush(&self) {
        let pending: Vec<Message> = self.pending.borrow_mut().drain().map(|(_, m)| m).collect();
        for m in pending {
            self.stores.messages.take_message(&m);
        }
    }
}
