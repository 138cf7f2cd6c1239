//! The composer's store: the draft (kept per conversation across switches and reloads), the
//! attachments being read and attached (`attachments.rs`, with the thumbnails of sent images), and
//! the user message being edited in place. Its signals are private: views read them and call its
//! actions; when the composer changes conversation is `ui/flow.rs`'s, and what Send does with the
//! draft is `engine::send`'s. Must not import `crate::store` or `crate::transport`.

use super::attachments::{Pending, PendingFile};
use crate::engine::model::Attachment;
use crate::engine::send::{on_submit, Submit};
use crate::ui::backend::Backend;
use leptos::prelude::*;
use leptos::task::spawn_local;

/// The composer: its draft, its attachments, the message being edited. `Copy`, in the `Stores`
/// context.
#[derive(Clone, Copy)]
pub struct ComposerStore {
    backend: Backend,
    /// The composer's text (kept per conversation across switches and reloads).
    draft: RwSignal<String>,
    /// The conversation whose stored draft is being read into the composer (`NEW_CHAT_DRAFT` for
    /// the new chat); `None` when none is (a temporary chat keeps no draft).
    wanted: RwSignal<Option<String>>,
    /// The conversation whose stored draft `draft` was loaded for; `None` while that read is under
    /// way after a switch (nothing is saved then, so a late save cannot clobber another draft).
    draft_of: RwSignal<Option<String>>,
    /// The user message whose text is being edited where it is.
    editing: RwSignal<Option<String>>,
    /// The images and files attached, not sent yet (`attachments.rs`).
    pending: Pending,
}

impl ComposerStore {
    /// An empty composer.
    pub fn new(backend: Backend) -> Self {
        ComposerStore {
            backend,
            draft: RwSignal::new(String::new()),
            wanted: RwSignal::new(None),
            draft_of: RwSignal::new(None),
            editing: RwSignal::new(None),
            pending: Pending::new(),
        }
    }

    /// The composer's text (tracked).
    pub fn draft(&self) -> String {
        self.draft.get()
    }

    /// Subscribes to the composer's text.
    pub fn track_draft(&self) {
        self.draft.track();
    }

    /// True while the composer holds nothing but blanks: no text, no attachment (tracked).
    pub fn draft_is_blank(&self) -> bool {
        self.draft.with(|d| d.trim().is_empty()) && self.pending.is_empty()
    }

    /// What Send and Enter do with the draft while a reply is (or is not) being written
    /// (`engine::send::on_submit`). Untracked.
    pub fn on_submit(&self, streaming: bool) -> Submit {
        untrack(|| {
            let attached = !self.pending.is_empty();
            self.draft.with(|d| on_submit(d, attached, streaming))
        })
    }

    /// The composer's text changed.
    pub fn set_draft(&self, text: String) {
        self.draft.set(text);
    }

    /// Empties the composer for sending: its text and attachments, taken.
    pub fn take(&self) -> (String, Vec<Attachment>) {
        let text = self.draft.try_update(std::mem::take).unwrap_or_default();
        (text, self.pending.take())
    }

    /// The composer's attachments, in order (tracked).
    pub fn with_attachments<R>(&self, f: impl FnOnce(&[PendingFile]) -> R) -> R {
        self.pending.with_files(f)
    }

    /// True while a file is being prepared for attaching (tracked).
    pub fn attaching(&self) -> bool {
        self.pending.attaching()
    }

    /// Attaches picked, pasted or dropped files (`store/attachments.rs`).
    pub fn attach_files(&self, files: Vec<web_sys::File>) {
        self.backend.dismiss_error();
        self.pending.attach(self.backend, files);
    }

    /// Removes the `i`-th attachment from the composer.
    pub fn remove_attachment(&self, i: usize) {
        self.pending.remove(self.backend, i);
    }

    /// Frees the stored images no message uses past their grace (start-up idle).
    pub fn sweep_unused_images(&self) {
        self.pending.sweep_unused(self.backend);
    }

    /// The thumbnail URL of a sent image (tracked; `None` until read, or when not stored here).
    pub fn thumbnail(&self, a: &Attachment) -> Option<String> {
        self.pending.thumbnail(self.backend, a)
    }

    /// Reads again the thumbnails of images that were not stored here (sync brought some).
    pub fn retry_thumbnails(&self) {
        self.pending.retry_absent();
    }

    /// True while the user message `message_id` is being edited (in place; tracked).
    pub fn is_editing(&self, message_id: &str) -> bool {
        self.editing.with(|e| e.as_deref() == Some(message_id))
    }

    /// Opens a user message's editor where the message is (the composer keeps its draft).
    pub fn start_edit(&self, message_id: String) {
        self.editing.set(Some(message_id));
    }

    /// Closes the editor; the message stays as it was.
    pub fn cancel_edit(&self) {
        self.editing.set(None);
    }

    /// Message `message_id` was deleted: its editor closes if it was open.
    pub fn deleted(&self, message_id: &str) {
        if self.is_editing_untracked(message_id) {
            self.editing.set(None);
        }
    }

    fn is_editing_untracked(&self, message_id: &str) -> bool {
        self.editing
            .with_untracked(|e| e.as_deref() == Some(message_id))
    }

    /// The composer now belongs to another conversation: it empties, no editor stays open, and
    /// nothing is saved until that conversation's stored draft is read ([`Self::load_draft`]).
    pub fn switch(&self) {
        self.wanted.set(None);
        self.draft_of.set(None);
        self.draft.set(String::new());
        self.editing.set(None);
    }

    /// Puts conversation `id`'s stored draft (`NEW_CHAT_DRAFT` for the new chat) into the composer,
    /// unless something was typed there while it was read (what the user typed wins, and is what
    /// gets saved from then on), or the composer moved on meanwhile.
    pub fn load_draft(&self, id: String) {
        self.wanted.set(Some(id.clone()));
        let (wanted, draft, draft_of) = (self.wanted, self.draft, self.draft_of);
        self.backend.run(move |s| async move {
            let stored = s.chat().draft(&id).await;
            if wanted.with_untracked(|w| w.as_deref() != Some(id.as_str())) {
                return Ok(());
            }
            if draft.with_untracked(String::is_empty) {
                draft.set(stored.unwrap_or_default());
            }
            draft_of.set(Some(id));
            Ok(())
        });
    }

    /// Saves the composer's draft for the conversation it was loaded for (once it has been).
    pub fn save_draft(&self) {
        spawn_local(self.draft_saved());
    }

    /// Saves the composer's draft (as `save_draft`) and resolves once it is stored: what must keep
    /// it (a reload into a new version of the app) waits for this.
    pub fn draft_saved(&self) -> impl std::future::Future<Output = ()> + 'static {
        let session = self.backend.session();
        let of = self.draft_of.get_untracked();
        let text = self.draft.get_untracked();
        async move {
            if let (Some(s), Some(id)) = (session, of) {
                s.chat().set_draft(&id, &text).await.ok();
            }
        }
    }
}
