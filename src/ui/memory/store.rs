//! The memory store: the memory pane's data for the conversation it shows (summary and its
//! versions, entities, the last update's failure), which conversations have a memory update
//! running, and building memory from a history (an import's offer, where the build stands). Its
//! signals are private: views read them and call its actions, each making its session calls through
//! the backend. Must not import `crate::store` or `crate::transport`, nor another store.

use crate::engine::memory::MemoryFailure;
use crate::engine::model::{ConversationSummary, EntityNode};
use crate::session::BuildStatus;
use crate::ui::backend::Backend;
use leptos::prelude::*;

/// The memory pane's data for the open conversation.
#[derive(Clone, Default, PartialEq)]
pub struct MemoryView {
    /// The summary in force (the last version).
    pub summary: Option<ConversationSummary>,
    /// Every version of the summary, oldest first.
    pub versions: Vec<ConversationSummary>,
    /// The entities of the conversation's memory.
    pub entities: Vec<EntityNode>,
    /// The latest memory update failed: when, why, what came back.
    pub failure: Option<MemoryFailure>,
}

/// The memory of the conversation shown, memory updates, memory builds. `Copy`, provided as context.
#[derive(Clone, Copy)]
pub struct MemoryStore {
    backend: Backend,
    /// The conversation whose memory is shown (the open one; `None` in the new chat).
    of: RwSignal<Option<String>>,
    view: RwSignal<MemoryView>,
    /// Conversations whose memory update is running.
    updating: RwSignal<Vec<String>>,
    /// Conversations an import just wrote, offered to have their memory built.
    offer: RwSignal<Vec<String>>,
    /// Where building memory from a history stands (`None`: no build since the page opened).
    build: RwSignal<Option<BuildStatus>>,
}

impl MemoryStore {
    /// No memory shown, nothing running.
    pub fn new(backend: Backend) -> Self {
        MemoryStore {
            backend,
            of: RwSignal::new(None),
            view: RwSignal::new(MemoryView::default()),
            updating: RwSignal::new(Vec::new()),
            offer: RwSignal::new(Vec::new()),
            build: RwSignal::new(None),
        }
    }

    /// Reads the memory shown (tracked: inside a reactive closure it re-runs on a change).
    pub fn with_view<R>(&self, f: impl FnOnce(&MemoryView) -> R) -> R {
        self.view.with(f)
    }

    /// How many conversations an import offered to build the memory of.
    pub fn offered(&self) -> usize {
        self.offer.with(Vec::len)
    }

    /// The conversations an import offered to build the memory of, without subscribing.
    pub fn offer_untracked(&self) -> Vec<String> {
        self.offer.get_untracked()
    }

    /// Where the last memory build stands.
    pub fn build(&self) -> Option<BuildStatus> {
        self.build.get()
    }

    /// True while a memory build runs.
    pub fn building(&self) -> bool {
        self.build
            .with(|b| matches!(b, Some(BuildStatus::Running { .. })))
    }

    /// True while the memory of the conversation shown is being updated.
    pub fn updating(&self) -> bool {
        let of = self.of.get();
        self.updating.with(|l| of.is_some_and(|c| l.contains(&c)))
    }

    /// Shows the memory of conversation `id` (or none): nothing of the one before stays; its memory
    /// is read by [`Self::reload`].
    pub fn show(&self, id: Option<String>) {
        self.of.set(id);
        self.view.set(MemoryView::default());
    }

    /// Reads the memory of the conversation shown again.
    pub fn reload(&self) {
        let Some(id) = self.of.get_untracked() else {
            return;
        };
        let (of, view) = (self.of, self.view);
        self.backend.run(move |s| async move {
            let m = s.memory().snapshot(&id).await?;
            if of.with_untracked(|o| o.as_deref() == Some(id.as_str())) {
                view.set(MemoryView {
                    summary: m.versions.last().cloned(),
                    versions: m.versions,
                    entities: m.entities,
                    failure: m.failure,
                });
            }
            Ok(())
        });
    }

    /// Updates the memory of the conversation shown now.
    pub fn update_now(&self) {
        let Some(id) = self.of.get_untracked() else {
            return;
        };
        self.backend
            .run(move |s| async move { Ok(s.memory().update_memory_now(&id).await?) });
    }

    /// Makes an earlier version of the summary the one in force.
    pub fn restore_summary(&self, version: u32) {
        let Some(id) = self.of.get_untracked() else {
            return;
        };
        self.backend
            .run(move |s| async move { Ok(s.memory().restore_summary(&id, version).await?) });
    }

    /// Saves an entity as the user edited it.
    pub fn save_entity(&self, node: EntityNode) {
        let Some(id) = self.of.get_untracked() else {
            return;
        };
        self.backend
            .run(move |s| async move { Ok(s.memory().save_entity(&id, node).await?) });
    }

    /// Deletes an entity from the memory.
    pub fn delete_entity(&self, entity_id: String) {
        let Some(id) = self.of.get_untracked() else {
            return;
        };
        self.backend
            .run(move |s| async move { Ok(s.memory().delete_entity(&id, &entity_id).await?) });
    }

    /// Builds the memory of `ids` from their history, in the background (see `session::catchup`).
    /// An import's offer stays until its build is done (a cancelled one can be taken up again).
    pub fn build_memory(&self, ids: Vec<String>) {
        // How the last build ended is not this one's.
        self.build.set(None);
        self.backend.run(move |s| async move {
            s.memory().build_memory(ids).await;
            Ok(())
        });
    }

    /// Builds the memory of the conversation shown from its history.
    pub fn build_shown(&self) {
        if let Some(id) = self.of.get_untracked() {
            self.build_memory(vec![id]);
        }
    }

    /// Cancels the memory build; what was built stays.
    pub fn cancel_build(&self) {
        if let Some(s) = self.backend.session() {
            s.memory().cancel_memory_build();
        }
    }

    /// Takes how the last build ended off the screen.
    pub fn dismiss_build(&self) {
        self.build.set(None);
    }

    /// An import wrote these conversations: their memory can be built.
    pub fn offer_build(&self, ids: Vec<String>) {
        self.offer.set(ids);
    }

    /// The user declined the import's offer.
    pub fn dismiss_offer(&self) {
        self.offer.set(Vec::new());
    }

    /// A memory update started or ended (`MemoryUpdating`).
    pub fn set_updating(&self, id: &str, running: bool) {
        self.updating.update(|l| {
            l.retain(|x| x != id);
            if running {
                l.push(id.to_string());
            }
        });
    }

    /// Where the build stands (`MemoryBuild`). Done, or ended with its own Retry of what failed: the
    /// import's offer is spent.
    pub fn build_reported(&self, b: BuildStatus) {
        if matches!(b, BuildStatus::Done(_) | BuildStatus::Failed { .. }) {
            self.offer.set(Vec::new());
        }
        self.build.set(Some(b));
    }
}
