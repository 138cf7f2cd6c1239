//! What the session keeps in memory so that a send, or a context preview, reads no storage: per
//! conversation, the engine's [`HistoryWindow`] (the conversation record and its recent messages)
//! and the memory in scope (the latest summary and the entities); and the facts about the user.
//!
//! It follows this tab's own writes through the events the session emits (the same events the UI
//! follows), and the window itself reports any input it cannot place (see `engine::window`). Events
//! from other tabs make it forget the conversation they touch: the next use reloads it. A load that
//! raced with an event is used once and not kept (the generation check). Must not import `ui`.

use crate::engine::model::{ConversationSummary, EntityNode, UserFact};
use crate::engine::tabs::Change;
use crate::engine::window::{Applied, HistoryWindow};
use std::collections::HashMap;
use std::rc::Rc;

/// The memory a prompt draws on for one conversation.
#[derive(Debug, Default)]
pub(crate) struct MemoryParts {
    pub summary: Option<ConversationSummary>,
    /// The conversation's own entities, then the shared ones.
    pub entities: Vec<EntityNode>,
}

#[derive(Default)]
pub(crate) struct Cache {
    windows: HashMap<String, HistoryWindow>,
    memory: HashMap<String, Rc<MemoryParts>>,
    /// Every fact about the user (current, past, forgotten), shared by every conversation.
    user_facts: Option<Rc<Vec<UserFact>>>,
    /// Bumped by every event that changes stored data; a load keeps its result only if no such event
    /// came while it was reading.
    generation: u64,
}

impl Cache {
    pub fn generation(&self) -> u64 {
        self.generation
    }

    pub fn window(&self, id: &str) -> Option<&HistoryWindow> {
        self.windows.get(id)
    }

    pub fn memory(&self, id: &str) -> Option<Rc<MemoryParts>> {
        self.memory.get(id).cloned()
    }

    pub fn user_facts(&self) -> Option<Rc<Vec<UserFact>>> {
        self.user_facts.clone()
    }

    /// Keeps the facts about the user loaded (or written) while the generation was `since`.
    pub fn keep_user_facts(&mut self, since: u64, facts: Rc<Vec<UserFact>>) {
        if since == self.generation {
            self.user_facts = Some(facts);
        }
    }

    /// Keeps a window loaded while the generation was `since`.
    pub fn keep_window(&mut self, since: u64, w: HistoryWindow) {
        if since == self.generation {
            self.windows.insert(w.conversation().id.clone(), w);
        }
    }

    /// Keeps memory loaded while the generation was `since`.
    pub fn keep_memory(&mut self, since: u64, id: &str, m: Rc<MemoryParts>) {
        if since == self.generation {
            self.memory.insert(id.to_string(), m);
        }
    }

    /// Forgets one conversation.
    pub fn forget(&mut self, id: &str) {
        self.generation += 1;
        self.windows.remove(id);
        self.memory.remove(id);
    }

    /// Forgets everything (after an import, which may touch any conversation).
    pub fn forget_all(&mut self) {
        self.generation += 1;
        self.windows.clear();
        self.memory.clear();
    }

    /// An event this tab emitted, after the store write it reports.
    pub fn observe_own(&mut self, e: &Change) {
        if let Change::Conversations(cs) = e {
            for c in cs {
                self.observe_own(&Change::Conversation(c.clone()));
            }
            return;
        }
        let (id, applied) = match e {
            Change::MessageAdded(m) => (
                &m.conversation_id,
                self.windows
                    .get_mut(&m.conversation_id)
                    .map(|w| w.handle_added(m.clone())),
            ),
            Change::MessageProgress(m) => (
                &m.conversation_id,
                self.windows
                    .get_mut(&m.conversation_id)
                    .map(|w| w.handle_updated(m)),
            ),
            Change::Conversation(c) => (
                &c.id,
                self.windows
                    .get_mut(&c.id)
                    .map(|w| w.handle_conversation(c)),
            ),
            Change::ConversationRemoved(id)
            | Change::MessagesCleared(id)
            | Change::BranchChanged(id) => return self.forget(id),
            Change::MemoryChanged(_) => return self.memory_changed(),
            Change::UserFacts => return self.user_facts_changed(),
            _ => return,
        };
        self.generation += 1;
        if applied == Some(Applied::Stale) {
            self.windows.remove(id);
        }
    }

    /// An event from another tab: whatever it touched is loaded again on next use.
    pub fn observe_remote(&mut self, e: &Change) {
        match e {
            Change::MessageAdded(m) | Change::MessageProgress(m) => self.forget(&m.conversation_id),
            Change::Conversation(c) => self.forget(&c.id),
            Change::Conversations(cs) => cs.iter().for_each(|c| self.forget(&c.id)),
            Change::ConversationRemoved(id)
            | Change::MessagesCleared(id)
            | Change::BranchChanged(id) => self.forget(id),
            Change::MemoryChanged(_) => self.memory_changed(),
            Change::UserFacts => self.user_facts_changed(),
            _ => {}
        }
    }

    /// Shared entities belong to every conversation, so any memory change forgets all memory.
    /// The facts are read again on next use.
    fn user_facts_changed(&mut self) {
        self.generation += 1;
        self.user_facts = None;
    }

    fn memory_changed(&mut self) {
        self.generation += 1;
        self.memory.clear();
    }
}
