//! The chat store: which conversation is open (a stored one, a temporary chat held by the session,
//! or the new chat with the model and project its first message will use) and the next request's
//! preview, with the actions on the open conversation as a whole: start a temporary chat or the new
//! chat's conversation, pick its model, use memory about the user, clear it. Its signals are
//! private: views read them and call its actions, each making its session calls through the
//! backend. What the chat shows of it lives in the stores beside it, one per domain: the composer
//! (`store/composer.rs`), the message list (`store/messages.rs`), the turns in flight
//! (`store/turn.rs`). It holds no other store: what opening or closing a conversation changes in
//! them and in other domains, and whether a message may go, are `ui/flow.rs`'s. Must not import
//! `crate::store` or `crate::transport`.

pub mod attachments;
pub mod composer;
pub mod messages;
pub mod turn;
pub mod window;

use crate::engine::model::{Attachment, Conversation, MemoryOverrides};
use crate::session::{ChatError, Preview};
use crate::ui::backend::Backend;
use leptos::prelude::*;

pub use crate::session::NEW_CHAT_DRAFT;

/// The open conversation. `Copy`, in the `Stores` context.
#[derive(Clone, Copy)]
pub struct ChatStore {
    backend: Backend,
    current: RwSignal<Option<String>>,
    preview: RwSignal<Option<Preview>>,
    /// The model picked in the new chat before its first message creates the conversation.
    new_chat_model: RwSignal<Option<String>>,
    /// The project the new chat starts in ("New" inside a project), until its first message.
    new_chat_project: RwSignal<Option<String>>,
    /// The open conversation's record when it is a temporary chat (held by the session in memory
    /// only; the library never lists it).
    temporary: RwSignal<Option<Conversation>>,
}

impl ChatStore {
    /// The new chat.
    pub fn new(backend: Backend) -> Self {
        ChatStore {
            backend,
            current: RwSignal::new(None),
            preview: RwSignal::new(None),
            new_chat_model: RwSignal::new(None),
            new_chat_project: RwSignal::new(None),
            temporary: RwSignal::new(None),
        }
    }

    /// The open conversation's id (`None`: the new chat). Tracked.
    pub fn current(&self) -> Option<String> {
        self.current.get()
    }

    /// True when a conversation is open (not the new chat). Tracked.
    pub fn has_current(&self) -> bool {
        self.current.with(Option::is_some)
    }

    /// True when conversation `id` is the open one (tracked).
    pub fn shows(&self, conversation_id: &str) -> bool {
        self.current.with(|c| c.as_deref() == Some(conversation_id))
    }

    /// True when conversation `id` is the open one, without subscribing (for events and async
    /// work, which run outside any view).
    pub fn is_current(&self, conversation_id: &str) -> bool {
        self.current
            .with_untracked(|c| c.as_deref() == Some(conversation_id))
    }

    /// Subscribes to which conversation is open.
    pub fn track_current(&self) {
        self.current.track();
    }

    /// Reads what the next request would contain (the context inspector).
    pub fn with_preview<R>(&self, f: impl FnOnce(&Option<Preview>) -> R) -> R {
        self.preview.with(f)
    }

    /// The model picked in the new chat, if any (tracked).
    pub fn new_chat_model(&self) -> Option<String> {
        self.new_chat_model.get()
    }

    /// The project the new chat starts in (`None`: none). Tracked.
    pub fn new_chat_project(&self) -> Option<String> {
        self.new_chat_project.get()
    }

    /// The open temporary chat's record, as the session holds it (the library never lists it).
    pub fn temporary(&self) -> Option<Conversation> {
        self.temporary.get()
    }

    /// True while the open conversation is a temporary chat (tracked).
    pub fn is_temporary(&self) -> bool {
        self.temporary.with(Option::is_some)
    }

    /// Makes conversation `id` (or the new chat) the open one, with no preview yet. Leaving a
    /// temporary chat ends it: nothing of it is kept anywhere.
    pub fn show(&self, id: Option<String>) {
        if self.temporary.get_untracked().is_some() {
            self.temporary.set(None);
            if let Some(s) = self.backend.session() {
                s.chat().end_temporary();
            }
        }
        self.current.set(id);
        self.preview.set(None);
    }

    /// The new chat starts in project `project` (`None`: outside any); true when that moved it.
    pub fn set_new_chat_project(&self, project: Option<String>) -> bool {
        let moved = self.new_chat_project.get_untracked() != project;
        self.new_chat_project.set(project);
        moved
    }

    /// Starts a temporary chat (with the model picked in the new chat, if any): never stored, no
    /// memory update, no memory about the user unless asked for. `started` runs with its id once it
    /// is open.
    pub fn start_temporary(&self, started: impl FnOnce(String) + 'static) {
        let this = *self;
        self.backend.run(move |s| async move {
            let model = this.new_chat_model.get_untracked();
            // Ends the temporary chat open before, if any.
            this.show(None);
            let c = s.chat().start_temporary(model);
            let id = c.id.clone();
            this.current.set(Some(c.id.clone()));
            this.temporary.set(Some(c));
            started(id);
            Ok(())
        });
    }

    /// The new chat's first message, `text` with `files`: creates its conversation (with the model
    /// and project picked for it), which `created` opens; the session runs the turn once it is.
    pub fn start_conversation(
        &self,
        text: String,
        files: Vec<Attachment>,
        created: impl FnOnce(String) + 'static,
    ) {
        let overrides = self.new_chat_overrides();
        self.backend.run(move |s| async move {
            let opened = |c: &Conversation| created(c.id.clone());
            let first = s
                .library()
                .start_conversation(overrides, text, files, opened);
            Ok(first.await?)
        });
    }

    /// The model and project picked for the new chat, as its conversation's overrides.
    fn new_chat_overrides(&self) -> MemoryOverrides {
        MemoryOverrides {
            model: self.new_chat_model.get_untracked(),
            project: self.new_chat_project.get_untracked(),
            ..Default::default()
        }
    }

    /// The model the open conversation (or the new chat) uses from its next turn; `None`: the one in
    /// Settings. The preview follows, with the composer's `draft`.
    pub fn pick_model(&self, model: Option<String>, draft: String) {
        if let Some(c) = self.temporary.get_untracked() {
            let this = *self;
            return self.backend.run(move |s| async move {
                this.temporary
                    .set(Some(s.chat().set_temporary_model(&c.id, model)?));
                this.refresh_preview(draft);
                Ok(())
            });
        }
        match self.current.get_untracked() {
            Some(id) => self
                .backend
                .run(move |s| async move { Ok(s.library().set_model(&id, model).await?) }),
            None => {
                self.new_chat_model.set(model);
                self.refresh_preview(draft);
            }
        }
    }

    /// "Use memory about me" in the open conversation (a temporary chat's preview follows, with the
    /// composer's `draft`; a stored one's follows its change event).
    pub fn use_user_memory(&self, on: bool, draft: String) {
        if let Some(c) = self.temporary.get_untracked() {
            let this = *self;
            return self.backend.run(move |s| async move {
                this.temporary
                    .set(Some(s.chat().use_memory_in_temporary(&c.id, on)?));
                this.refresh_preview(draft);
                Ok(())
            });
        }
        if let Some(id) = self.current.get_untracked() {
            self.backend
                .run(move |s| async move { Ok(s.library().set_user_memory(&id, on).await?) });
        }
    }

    /// Clears the open stored conversation's messages and memory (the composer asked first);
    /// `cleared` runs with its id once that is stored.
    pub fn clear(&self, cleared: impl FnOnce(String) + 'static) {
        let Some(id) = self.current.get_untracked() else {
            return;
        };
        self.backend.run(move |s| async move {
            s.library().clear(&id).await?;
            cleared(id);
            Ok(())
        });
    }

    /// Recomputes what the next request would contain with the composer's `draft`, for the context
    /// inspector.
    pub fn refresh_preview(&self, draft: String) {
        // The new chat (no conversation yet) previews its first message.
        let id = self.current.get_untracked().unwrap_or_default();
        let overrides = self.new_chat_overrides();
        let (current, preview) = (self.current, self.preview);
        self.backend.run(move |s| async move {
            let p = match s.chat().preview(&id, &draft, overrides).await {
                Ok(p) => p,
                // Without the turn's chunk (not fetched yet, offline before the service worker had
                // it) the inspector keeps what it showed: a send says why, not the idle preview.
                Err(ChatError::Unavailable) => return Ok(()),
                Err(e) => return Err(e.into()),
            };
            if current.get_untracked().unwrap_or_default() == id {
                preview.set(Some(p));
            }
            Ok(())
        });
    }
}
