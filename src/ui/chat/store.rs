//! The chat store: the open conversation (which one, its window of messages in `store/window.rs`,
//! which conversations have a turn running, the message to scroll to, the user message being
//! edited, the composer's draft, the next request's preview, the model picked in the new chat) and
//! every action on it: open, close, page, send, stop, retry, edit, regenerate, the pager between
//! alternatives, delete, clear. Its signals are private: views read them and call its actions, each
//! making its session calls through the backend. It holds no other store: what opening a
//! conversation changes in other domains (the memory shown, the record held, the banner) and
//! whether a message may go are `ui/flow.rs`'s. Must not import `crate::store` or
//! `crate::transport`.

pub mod attachments;
pub mod window;

use crate::engine::model::{Conversation, MemoryOverrides, Message, MessageStatus, Role};
use crate::engine::window::Edge;
use crate::session::{ChatError, Preview};
use crate::ui::backend::Backend;
use crate::ui::behaviour::when_idle;
use crate::ui::route::{remember_open, set_route};
use leptos::prelude::*;
use leptos::task::spawn_local;
use window::{MessageItem, MessageWindow, PAGE};

pub use crate::session::NEW_CHAT_DRAFT;

/// The open conversation and what is done in it. `Copy`, provided as context.
#[derive(Clone, Copy)]
pub struct ChatStore {
    backend: Backend,
    current: RwSignal<Option<String>>,
    window: MessageWindow,
    /// Conversations with a turn in flight.
    streaming: RwSignal<Vec<String>>,
    preview: RwSignal<Option<Preview>>,
    /// The composer's text (kept per conversation across switches and reloads).
    draft: RwSignal<String>,
    /// The conversation whose stored draft `draft` was loaded for; `None` while that read is under
    /// way after a switch (nothing is saved then, so a late save cannot clobber another draft).
    draft_of: RwSignal<Option<String>>,
    /// Message to scroll to after opening a conversation from a search hit.
    focus: RwSignal<Option<String>>,
    /// The user message whose text is in the composer to be edited and sent again.
    editing: RwSignal<Option<String>>,
    /// The model picked in the new chat before its first message creates the conversation.
    new_chat_model: RwSignal<Option<String>>,
    /// The project the new chat starts in ("New" inside a project), until its first message.
    new_chat_project: RwSignal<Option<String>>,
    /// The open conversation's record when it is a temporary chat (held by the session in memory
    /// only; the library never lists it).
    temporary: RwSignal<Option<Conversation>>,
    /// The images and files attached in the composer, not sent yet (`store/attachments.rs`).
    pending: attachments::Pending,
}

impl ChatStore {
    /// The new chat, nothing mounted.
    pub fn new(backend: Backend) -> Self {
        ChatStore {
            backend,
            current: RwSignal::new(None),
            window: MessageWindow::new(),
            streaming: RwSignal::new(Vec::new()),
            preview: RwSignal::new(None),
            draft: RwSignal::new(String::new()),
            draft_of: RwSignal::new(None),
            focus: RwSignal::new(None),
            editing: RwSignal::new(None),
            new_chat_model: RwSignal::new(None),
            new_chat_project: RwSignal::new(None),
            temporary: RwSignal::new(None),
            pending: attachments::Pending::new(),
        }
    }

    // Readers: each reads one private signal, tracked (inside a reactive closure it re-runs on a
    // change) unless it says untracked.

    /// The open conversation's id (`None`: the new chat).
    pub fn current(&self) -> Option<String> {
        self.current.get()
    }

    /// [`Self::current`] without subscribing (for event handlers).
    pub fn current_untracked(&self) -> Option<String> {
        self.current.get_untracked()
    }

    /// True when a conversation is open (not the new chat).
    pub fn has_current(&self) -> bool {
        self.current.with(Option::is_some)
    }

    /// True when conversation `id` is the open one (tracked).
    pub fn shows(&self, conversation_id: &str) -> bool {
        self.current.with(|c| c.as_deref() == Some(conversation_id))
    }

    /// Subscribes to which conversation is open.
    pub fn track_current(&self) {
        self.current.track();
    }

    /// Reads the mounted messages, oldest first.
    pub fn with_messages<R>(&self, f: impl FnOnce(&[MessageItem]) -> R) -> R {
        self.window.with_messages(f)
    }

    /// [`Self::with_messages`] without subscribing (for event handlers).
    pub fn with_messages_untracked<R>(&self, f: impl FnOnce(&[MessageItem]) -> R) -> R {
        self.window.with_messages_untracked(f)
    }

    /// True while older messages exist above the mounted ones.
    pub fn has_older(&self) -> bool {
        self.window.has_older()
    }

    /// True while newer messages exist below the mounted ones.
    pub fn has_newer(&self) -> bool {
        self.window.has_newer()
    }

    /// [`Self::has_older`] without subscribing (for event handlers).
    pub fn has_older_untracked(&self) -> bool {
        self.window.has_older_untracked()
    }

    /// [`Self::has_newer`] without subscribing (for event handlers).
    pub fn has_newer_untracked(&self) -> bool {
        self.window.has_newer_untracked()
    }

    /// True while a page of messages is being read.
    pub fn loading(&self) -> bool {
        self.window.loading()
    }

    /// [`Self::loading`] without subscribing (for event handlers).
    pub fn loading_untracked(&self) -> bool {
        self.window.loading_untracked()
    }

    /// Reads what the next request would contain (the context inspector).
    pub fn with_preview<R>(&self, f: impl FnOnce(&Option<Preview>) -> R) -> R {
        self.preview.with(f)
    }

    /// The composer's text.
    pub fn draft(&self) -> String {
        self.draft.get()
    }

    /// [`Self::draft`] without subscribing (for event handlers).
    pub fn draft_untracked(&self) -> String {
        self.draft.get_untracked()
    }

    /// True while the composer holds nothing but blanks.
    /// [`Self::draft_is_blank`] without subscribing (for event handlers).
    pub fn draft_is_blank_untracked(&self) -> bool {
        self.draft.with_untracked(|d| d.trim().is_empty()) && self.pending.is_empty_untracked()
    }

    pub fn draft_is_blank(&self) -> bool {
        self.draft.with(|d| d.trim().is_empty()) && self.pending.is_empty()
    }

    /// The composer's attachments, in order.
    pub fn with_attachments<R>(&self, f: impl FnOnce(&[attachments::PendingFile]) -> R) -> R {
        self.pending.with_files(f)
    }

    /// True while a file is being prepared for attaching.
    pub fn attaching(&self) -> bool {
        self.pending.attaching()
    }

    /// [`Self::attaching`] without subscribing (when Send is pressed).
    pub fn attaching_untracked(&self) -> bool {
        self.pending.busy_untracked()
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
    pub fn thumbnail(&self, a: &crate::engine::model::Attachment) -> Option<String> {
        self.pending.thumbnail(self.backend, a)
    }

    /// Reads again the thumbnails of images that were not stored here (sync brought some).
    pub fn retry_thumbnails(&self) {
        self.pending.retry_absent();
    }

    /// Subscribes to the composer's text.
    pub fn track_draft(&self) {
        self.draft.track();
    }

    /// True while the user message `message_id` is being edited (in place).
    pub fn is_editing(&self, message_id: &str) -> bool {
        self.editing.with(|e| e.as_deref() == Some(message_id))
    }

    /// The message to scroll to, if any.
    pub fn focus(&self) -> Option<String> {
        self.focus.get()
    }

    /// The model picked in the new chat, if any.
    pub fn new_chat_model(&self) -> Option<String> {
        self.new_chat_model.get()
    }

    /// The open temporary chat's record, as the session holds it (the library never lists it).
    pub fn temporary(&self) -> Option<Conversation> {
        self.temporary.get()
    }

    /// True while the open conversation is a temporary chat.
    pub fn is_temporary(&self) -> bool {
        self.temporary.with(Option::is_some)
    }

    /// True when conversation `id` is the open one.
    pub fn is_current(&self, conversation_id: &str) -> bool {
        self.current
            .with_untracked(|c| c.as_deref() == Some(conversation_id))
    }

    /// True while the open conversation has a turn in flight.
    pub fn streaming(&self) -> bool {
        let cur = self.current.get();
        self.streaming.with(|s| cur.is_some_and(|c| s.contains(&c)))
    }

    /// [`Self::streaming`] without subscribing (for event handlers).
    pub fn streaming_untracked(&self) -> bool {
        untrack(|| self.streaming())
    }

    /// True when the last message of the open conversation is a user's, or a reply that failed or
    /// was cut off, and no turn runs.
    pub fn can_retry(&self) -> bool {
        !self.streaming()
            && self.window.with_messages(|l| {
                l.last().is_some_and(|m| {
                    matches!(
                        m.state().status(),
                        MessageStatus::Error | MessageStatus::Interrupted
                    ) || m.role == Role::User
                })
            })
    }

    /// The message Retry sits on: the last one, while [`Self::can_retry`].
    pub fn retry_on(&self) -> Option<String> {
        if !self.can_retry() {
            return None;
        }
        self.window
            .with_messages(|l| l.last().map(|m| m.id.clone()))
    }

    /// Shows conversation `id` (or none) with nothing of the one before: the one reset of everything
    /// that belongs to the open conversation, used to open, close and lose one.
    fn show(&self, id: Option<String>) {
        // Leaving a temporary chat ends it: nothing of it is kept anywhere.
        if self.temporary.get_untracked().is_some() {
            self.temporary.set(None);
            if let Some(s) = self.backend.session() {
                s.chat().end_temporary();
            }
        }
        self.current.set(id);
        self.window.clear();
        self.preview.set(None);
        self.focus.set(None);
        self.editing.set(None);
        // The composer belongs to the new conversation at once; its stored draft follows.
        self.draft_of.set(None);
        self.draft.set(String::new());
    }

    /// Opens a conversation: mounts its last page of messages and the next-request preview; `drawn`
    /// runs once the messages are drawn (what other domains show of it follows then: their reads
    /// must not hold up the first paint). `focus` scrolls to a message (from a search hit), loading
    /// back to it if needed. Returns whether another conversation was shown before.
    pub fn open(&self, id: String, focus: Option<String>, drawn: impl FnOnce() + 'static) -> bool {
        set_route(Some(&id));
        remember_open(Some(&id));
        let switched = !self.is_current(&id);
        if switched {
            self.save_draft();
            self.show(Some(id.clone()));
            self.load_draft(id.clone());
        }
        self.focus.set(focus.clone());
        let this = *self;
        self.backend.run(move |s| async move {
            this.window.set_loading(true);
            let page = s
                .library()
                .load_page(&id, None, PAGE, focus.as_deref())
                .await;
            this.window.set_loading(false);
            let page = page?;
            if !this.is_current(&id) {
                return Ok(());
            }
            this.window.replace(&page, false);
            request_animation_frame(move || {
                drawn();
                this.refresh_preview();
            });
            Ok(())
        });
        switched
    }

    /// The first screen shows the new chat: its stored draft, and its preview once the page is idle
    /// (the inspector is not on the first screen).
    pub fn show_new_chat(&self) {
        self.load_draft(NEW_CHAT_DRAFT.to_string());
        let this = *self;
        when_idle(move |_| this.refresh_preview(), 500, 0);
    }

    /// Mounts the last page of the open conversation again after its branch changed: what the old
    /// branch showed goes (a reply still streaming on the new one comes back with its next save).
    pub fn show_branch(&self, id: String) {
        let this = *self;
        self.backend.run(move |s| async move {
            let page = s.library().load_page(&id, None, PAGE, None).await?;
            if this.is_current(&id) {
                this.window.replace(&page, true);
            }
            Ok(())
        });
    }

    /// Mounts the page of messages above the window.
    pub fn load_older(&self) {
        self.load_more(Edge::Start);
    }

    /// Mounts the page of messages below the window (when it stops short of the latest one).
    pub fn load_newer(&self) {
        self.load_more(Edge::End);
    }

    /// Mounts the page beyond one end of the window, if there is one and nothing is loading.
    fn load_more(&self, edge: Edge) {
        let Some(id) = self.current.get_untracked() else {
            return;
        };
        let Some(at) = self.window.edge_to_load(edge) else {
            return;
        };
        self.window.set_loading(true);
        let this = *self;
        self.backend.run(move |s| async move {
            let page = match edge {
                Edge::Start => s.library().load_page(&id, Some(at), PAGE, None).await,
                Edge::End => s.library().load_page_after(&id, at, PAGE).await,
            };
            this.window.set_loading(false);
            let page = page?;
            if this.is_current(&id) {
                this.window.join(edge, &page);
            }
            Ok(())
        });
    }

    /// The project the new chat starts in (`None`: none).
    pub fn new_chat_project(&self) -> Option<String> {
        self.new_chat_project.get()
    }

    /// New: an empty chat inside project `project` (`None`: outside any), with nothing stored until
    /// its first message (which creates the conversation in it, see [`Self::send`]). The
    /// conversation open before stays the one the app reopens, and a draft typed in the new chat is
    /// kept for the next New. Returns whether a conversation was shown before.
    pub fn new_conversation_in(&self, project: Option<String>) -> bool {
        let moved = self.new_chat_project.get_untracked() != project;
        self.new_chat_project.set(project);
        if self.current.with_untracked(Option::is_none) {
            if moved {
                self.refresh_preview();
            }
            return false;
        }
        self.save_draft();
        self.show(None);
        self.new_chat_model.set(None);
        self.load_draft(NEW_CHAT_DRAFT.to_string());
        self.refresh_preview();
        true
    }

    /// Starts a temporary chat (with the model picked in the new chat, if any): never stored, no
    /// memory update, no memory about the user unless asked for; the app reopens the new chat
    /// after a reload.
    pub fn start_temporary(&self) {
        let this = *self;
        self.backend.run(move |s| async move {
            this.save_draft();
            set_route(None);
            remember_open(None);
            let model = this.new_chat_model.get_untracked();
            // Ends the temporary chat open before, if any, with what belonged to the open one.
            this.show(None);
            let c = s.chat().start_temporary(model);
            this.current.set(Some(c.id.clone()));
            this.temporary.set(Some(c));
            this.refresh_preview();
            Ok(())
        });
    }

    /// Closes the open conversation (its draft is saved first): the chat shows a new one.
    pub fn close(&self) {
        self.save_draft();
        remember_open(None);
        self.show(None);
        self.load_draft(NEW_CHAT_DRAFT.to_string());
        self.refresh_preview();
    }

    /// The model the open conversation (or the new chat) uses from its next turn; `None`: the one in
    /// Settings.
    pub fn pick_model(&self, model: Option<String>) {
        if let Some(c) = self.temporary.get_untracked() {
            let this = *self;
            return self.backend.run(move |s| async move {
                this.temporary
                    .set(Some(s.chat().set_temporary_model(&c.id, model)?));
                this.refresh_preview();
                Ok(())
            });
        }
        match self.current.get_untracked() {
            Some(id) => self
                .backend
                .run(move |s| async move { Ok(s.library().set_model(&id, model).await?) }),
            None => {
                self.new_chat_model.set(model);
                self.refresh_preview();
            }
        }
    }

    /// "Use memory about me" in the open conversation.
    pub fn use_user_memory(&self, on: bool) {
        if let Some(c) = self.temporary.get_untracked() {
            let this = *self;
            return self.backend.run(move |s| async move {
                this.temporary
                    .set(Some(s.chat().use_memory_in_temporary(&c.id, on)?));
                this.refresh_preview();
                Ok(())
            });
        }
        if let Some(id) = self.current.get_untracked() {
            self.backend
                .run(move |s| async move { Ok(s.library().set_user_memory(&id, on).await?) });
        }
    }

    /// The draft Send and Enter would send: `None` while it is blank or a reply is being written.
    pub fn submittable(&self) -> Option<String> {
        if self.draft_is_blank_untracked() || self.streaming_untracked() {
            return None;
        }
        Some(self.draft.get_untracked())
    }

    /// The turn's chunk (split point `turn`) is fetched once the page is idle, so the first Send
    /// does not wait for it; a send before it is here waits for it (and fetches it again if this
    /// failed).
    pub fn preload_turn_when_idle(&self) {
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

    /// Sends `text` (the draft, which empties) with the composer's attachments, in the open
    /// conversation; the new chat's first message creates its conversation, which `created` opens
    /// (the session runs the turn once it is). Whether it may go is the caller's (`engine::send`).
    pub fn send(&self, text: String, created: impl FnOnce(String) + 'static) {
        self.draft.set(String::new());
        let files = self.pending.take();
        let Some(id) = self.current.get_untracked() else {
            let overrides = MemoryOverrides {
                model: self.new_chat_model.get_untracked(),
                project: self.new_chat_project.get_untracked(),
                ..Default::default()
            };
            return self.backend.run(move |s| async move {
                let opened = |c: &Conversation| created(c.id.clone());
                let first = s
                    .library()
                    .start_conversation(overrides, text, files, opened);
                Ok(first.await?)
            });
        };
        if self.temporary.with_untracked(Option::is_none) && self.window.leave_far_up() {
            // The window was far up: back to the latest messages, where the new one goes.
            self.open(id.clone(), None, || {});
        }
        // The session clears the stored draft once the message itself is stored.
        self.backend
            .run(move |s| async move { Ok(s.chat().send_with(&id, text, files).await?) });
    }

    /// Stops the open conversation's reply.
    pub fn stop(&self) {
        if let (Some(id), Some(s)) = (self.current.get_untracked(), self.backend.session()) {
            s.chat().stop(&id);
        }
    }

    /// Re-sends the last user turn.
    pub fn retry(&self) {
        let Some(id) = self.current.get_untracked() else {
            return;
        };
        self.backend.dismiss_error();
        self.backend
            .run(move |s| async move { Ok(s.chat().retry(&id).await?) });
    }

    /// Opens a user message's editor where the message is (the composer keeps its draft).
    pub fn start_edit(&self, message_id: String) {
        self.editing.set(Some(message_id));
    }

    /// Closes the editor; the message stays as it was.
    pub fn cancel_edit(&self) {
        self.editing.set(None);
    }

    /// Sends `text` in place of user message `message_id`: a new branch (the old one stays a page
    /// away, see `Session::edit`).
    pub fn edit(&self, message_id: String, text: String) {
        let Some(id) = self.current.get_untracked() else {
            return;
        };
        self.editing.set(None);
        self.backend.dismiss_error();
        self.backend
            .run(move |s| async move { Ok(s.chat().edit(&id, &message_id, text).await?) });
    }

    /// Asks the agent again for a reply; the earlier reply stays as an alternative.
    pub fn regenerate(&self, reply_id: String) {
        let Some(id) = self.current.get_untracked() else {
            return;
        };
        self.backend.dismiss_error();
        self.backend
            .run(move |s| async move { Ok(s.chat().regenerate(&id, &reply_id).await?) });
    }

    /// Continue: asks for the rest of reply `reply_id`, which the reply cap cut; it grows in place.
    pub fn continue_reply(&self, reply_id: String) {
        let Some(id) = self.current.get_untracked() else {
            return;
        };
        self.backend.dismiss_error();
        self.backend
            .run(move |s| async move { Ok(s.chat().continue_reply(&id, &reply_id).await?) });
    }

    /// Shows another alternative of a message (the pager's ‹ and ›).
    pub fn show_alternative(&self, message_id: String) {
        let Some(id) = self.current.get_untracked() else {
            return;
        };
        self.backend
            .run(move |s| async move { Ok(s.chat().show_alternative(&id, &message_id).await?) });
    }

    /// Deletes one message (the view asked first).
    pub fn delete_message(&self, message_id: String) {
        let Some(id) = self.current.get_untracked() else {
            return;
        };
        if self.editing.get_untracked().as_deref() == Some(message_id.as_str()) {
            self.editing.set(None);
        }
        self.backend
            .run(move |s| async move { Ok(s.chat().delete_message(&id, &message_id).await?) });
    }

    /// Clears the open conversation's messages and memory (the composer asked first); the composer
    /// empties, and `drawn` runs once the emptied conversation is drawn again.
    pub fn clear(&self, drawn: impl FnOnce() + 'static) {
        if self.temporary.with_untracked(Option::is_some) {
            // Nothing of it is stored: a new temporary chat is the cleared one.
            return self.start_temporary();
        }
        self.draft.set(String::new());
        let Some(id) = self.current.get_untracked() else {
            return;
        };
        let this = *self;
        self.backend.run(move |s| async move {
            s.library().clear(&id).await?;
            this.open(id, None, drawn);
            Ok(())
        });
    }

    /// Recomputes what the next request would contain, for the context inspector.
    pub fn refresh_preview(&self) {
        // The new chat (no conversation yet) previews its first message.
        let id = self.current.get_untracked().unwrap_or_default();
        let overrides = MemoryOverrides {
            model: self.new_chat_model.get_untracked(),
            project: self.new_chat_project.get_untracked(),
            ..Default::default()
        };
        let draft = self.draft.get_untracked();
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

    /// The composer's text changed.
    pub fn set_draft(&self, text: String) {
        self.draft.set(text);
    }

    /// The message list scrolled to the focused message.
    pub fn focused(&self) {
        self.focus.set(None);
    }

    /// Puts the open conversation's stored draft (`id`; [`NEW_CHAT_DRAFT`] for the new chat) into the
    /// composer, unless something was typed there while it was read (what the user typed wins, and is
    /// what gets saved from then on).
    fn load_draft(&self, id: String) {
        let (current, draft, draft_of) = (self.current, self.draft, self.draft_of);
        self.backend.run(move |s| async move {
            let stored = s.chat().draft(&id).await;
            if current.get_untracked().unwrap_or_default() != id {
                return Ok(());
            }
            if draft.with_untracked(String::is_empty) {
                draft.set(stored.unwrap_or_default());
            }
            draft_of.set(Some(id));
            Ok(())
        });
    }

    /// Saves the composer draft of the open conversation, or of the new chat (once its stored draft
    /// has been loaded).
    pub fn save_draft(&self) {
        spawn_local(self.draft_saved());
    }

    /// Saves the composer's draft (as `save_draft`) and resolves once it is stored: what must keep
    /// it (a reload into a new version of the app) waits for this.
    pub fn draft_saved(&self) -> impl std::future::Future<Output = ()> + 'static {
        let session = self.backend.session();
        let id = self.current.get_untracked().unwrap_or_default();
        let loaded = self
            .draft_of
            .with_untracked(|d| d.as_deref() == Some(id.as_str()));
        let text = self.draft.get_untracked();
        async move {
            if let (Some(s), true) = (session, loaded) {
                s.chat().set_draft(&id, &text).await.ok();
            }
        }
    }

    /// A message stored or changed (`MessageAdded`, `MessageProgress`): shown if it belongs in the
    /// open conversation's window; true when the window missed messages before it and must be
    /// reloaded.
    pub fn take_message(&self, m: &Message) -> bool {
        self.is_current(&m.conversation_id) && self.window.take(m)
    }

    /// A conversation's messages were cleared (`MessagesCleared`).
    pub fn cleared(&self, id: &str) {
        if self.is_current(id) {
            self.window.clear();
        }
    }

    /// A turn started or ended (`TurnRunning`).
    pub fn set_running(&self, id: &str, running: bool) {
        self.streaming.update(|l| {
            l.retain(|x| x != id);
            if running {
                l.push(id.to_string());
            }
        });
    }

    /// A conversation was deleted (here or in another tab): if it was open, it is closed rather
    /// than shown as a ghost (true).
    pub fn removed(&self, id: &str) -> bool {
        let open = self.is_current(id);
        if open {
            self.show(None);
        }
        open
    }
}
