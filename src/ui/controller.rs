//! The controller: the one place views turn a user action into a session call. It runs the call
//! (spawned on the local executor), puts results into the signals and errors into the banner.
//! Must not import `store` or `transport`: components never touch IndexedDB or fetch.

use crate::engine::format::{conversation_to_reopen, export_file_name};
use crate::engine::import::slice::{Phase, Progress};
use crate::engine::model::{Conversation, EntityNode, MemoryOverrides, MessageStatus};
use crate::engine::settings::Settings;
use crate::engine::window::{join_page, Edge};
use crate::session::{ErrorKind, ImportCancel, ImportStep, Session, SessionError};
use crate::ui::behaviour::{save_file, when_idle};
use crate::ui::state::{
    AppState, ImportState, ListWindow, MemoryView, MessageItem, ModelList, LIST_CAP,
};
use crate::ui::time::now_ms;
use leptos::prelude::*;
use leptos::task::spawn_local;
use std::future::Future;
use std::rc::Rc;
use std::sync::atomic::Ordering;

/// How many messages are mounted when a conversation opens, and per "load older" step.
pub const PAGE: usize = 60;
/// Most messages mounted at once: scrolling further unmounts pages at the other end, so even
/// 10,000 messages keep a small DOM.
pub const MOUNT_CAP: usize = 4 * PAGE;

/// Conversations read per page of the sidebar's list.
pub const LIST_PAGE: usize = 30;

/// An action's future, boxed: one non-generic spawn and error path shared by every action, instead of
/// a copy of both per call site of [`Controller::run`] (wasm bytes).
type Action = std::pin::Pin<Box<dyn Future<Output = Result<(), SessionError>>>>;

fn spawn_action(state: AppState, action: Action) {
    spawn_local(async move {
        if let Err(e) = action.await {
            state.fail(e.to_string(), e.kind());
        }
    });
}

/// What to export.
#[derive(Clone, Copy, PartialEq)]
pub enum Export {
    ConversationJson,
    ConversationMarkdown,
    Everything,
}

/// The draft key of the new chat (no conversation yet): its draft is kept like a conversation's.
pub const NEW_CHAT_DRAFT: &str = "";

/// The key under which this browser remembers the conversation open when the app was left.
const LAST_OPEN_KEY: &str = "memoire.last-open";

/// The conversation open when the app was last left (this browser's local storage).
pub fn last_open() -> Option<String> {
    let ls = web_sys::window()?.local_storage().ok()??;
    ls.get_item(LAST_OPEN_KEY).ok()?
}

fn remember_open(id: Option<&str>) {
    let Some(ls) = web_sys::window().and_then(|w| w.local_storage().ok().flatten()) else {
        return;
    };
    let _ = match id {
        Some(id) => ls.set_item(LAST_OPEN_KEY, id),
        None => ls.remove_item(LAST_OPEN_KEY),
    };
}

/// What a send says while the browser is offline; coming back online clears it.
pub const OFFLINE_SEND: &str =
    "You are offline. Your message is kept in the composer; send it when you are back online.";

/// Provided as context; `Copy`.
#[derive(Clone, Copy)]
pub struct Controller {
    pub state: AppState,
    session: StoredValue<Option<Rc<Session>>, LocalStorage>,
    /// Actions asked for while the database was still opening; they run as soon as it is open.
    pending: StoredValue<Vec<PendingAction>, LocalStorage>,
}

type PendingAction = Box<dyn FnOnce(Rc<Session>)>;

impl Controller {
    pub fn new(state: AppState) -> Self {
        Controller {
            state,
            session: StoredValue::new_local(None),
            pending: StoredValue::new_local(Vec::new()),
        }
    }

    /// The database is open: actions asked for before now run, in order.
    pub fn set_session(&self, session: Rc<Session>) {
        self.session.set_value(Some(session.clone()));
        let pending = self
            .pending
            .try_update_value(std::mem::take)
            .unwrap_or_default();
        for action in pending {
            action(session.clone());
        }
    }

    /// The database is open: the settings in force, then the conversation list, then the
    /// conversation to show (`engine::format::conversation_to_reopen`).
    pub fn start(&self, session: Rc<Session>) {
        let st = self.state;
        st.settings.set(session.preferences().current());
        self.set_session(session);
        st.ready.set(true);
        let ctl = *self;
        self.run(move |s, st| async move {
            let shown = ctl.first_screen(&s).await;
            announce_first_screen();
            // What the first screen does not need waits until the page is idle after it (shown or not:
            // the memory pane must not stay empty after a failed read).
            when_idle(move |_| st.settled.set(true), 500, 0);
            shown
        });
        // The storage figure (Settings) waits until the page is idle too.
        when_idle(move |_| ctl.refresh_storage(), 500, 0);
    }

    /// The first page of the conversation list, then the conversation to reopen (or the new chat's
    /// draft). Only one page is read: a library of 10,000 opens like an empty one.
    async fn first_screen(&self, s: &Session) -> Result<(), SessionError> {
        let (ctl, st) = (*self, self.state);
        let list = s.library().list_page(None, LIST_PAGE).await?;
        let last = match last_open() {
            Some(id) if !list.iter().any(|c| c.id == id) => {
                s.library().conversation(&id).await?.map(|c| c.id)
            }
            other => other,
        };
        let reopen = conversation_to_reopen(route().as_deref(), last.as_deref(), |id| {
            list.iter().any(|c| c.id == id) || last.as_deref() == Some(id)
        });
        st.list_window.set(ListWindow {
            more_below: list.len() == LIST_PAGE,
            ..ListWindow::default()
        });
        st.conversations.set(list);
        match reopen {
            Some(id) => ctl.open(id, None),
            None => {
                ctl.load_draft(NEW_CHAT_DRAFT.to_string());
                // The inspector is not on the first screen: its preview waits until the page is idle.
                when_idle(move |_| ctl.refresh_preview(), 500, 0);
            }
        }
        Ok(())
    }

    fn session(&self) -> Option<Rc<Session>> {
        self.session.get_value()
    }

    /// Runs `f` with the session; an error goes to the banner. Asked for while the database is still
    /// opening (a click in the first moment after the page loads), it runs once the database is open.
    pub fn run<F, Fut>(&self, f: F)
    where
        F: FnOnce(Rc<Session>, AppState) -> Fut + 'static,
        Fut: Future<Output = Result<(), SessionError>> + 'static,
    {
        let state = self.state;
        match self.session() {
            Some(session) => spawn_action(state, Box::pin(f(session, state))),
            None => self.pending.update_value(|p| {
                p.push(Box::new(move |session| {
                    spawn_action(state, Box::pin(f(session, state)))
                }))
            }),
        }
    }

    /// Opens a conversation: mounts its last page of messages, its memory and the next-request preview.
    /// `focus` scrolls to a message (from a search hit), loading back to it if needed.
    pub fn open(&self, id: String, focus: Option<String>) {
        let ctl = *self;
        let st = self.state;
        set_route(Some(&id));
        remember_open(Some(&id));
        if st.current.get_untracked().as_deref() != Some(id.as_str()) {
            ctl.save_draft();
            st.show_conversation(Some(id.clone()));
            ctl.load_draft(id.clone());
        }
        st.focus_message.set(focus.clone());
        // Kept apart from the sidebar's window, which may scroll it away (or never held it).
        st.opened.set(
            st.conversations
                .with_untracked(|l| l.iter().find(|c| c.id == id).cloned()),
        );
        self.run(move |s, st| async move {
            if st.opened.with_untracked(|o| o.is_none()) {
                st.opened.set(s.library().conversation(&id).await?);
            }
            st.loading_messages.set(true);
            let page = s
                .library()
                .load_page(&id, None, PAGE, focus.as_deref())
                .await;
            st.loading_messages.set(false);
            let page = page?;
            if !st.is_current(&id) {
                return Ok(());
            }
            st.has_older.set(page.has_older);
            st.has_newer.set(page.has_newer);
            st.replace_window(&page, false);
            // The memory pane and the inspector follow once the messages are drawn: their reads must
            // not hold up the first paint of the conversation.
            request_animation_frame(move || {
                ctl.reload_memory();
                ctl.refresh_preview();
            });
            Ok(())
        });
    }

    /// Mounts the last page of the open conversation again after its branch changed: what the old
    /// branch showed goes (a reply still streaming on the new one comes back with its next save).
    pub fn show_branch(&self, id: String) {
        self.run(move |s, st| async move {
            let page = s.library().load_page(&id, None, PAGE, None).await?;
            if !st.is_current(&id) {
                return Ok(());
            }
            st.has_older.set(page.has_older);
            st.has_newer.set(page.has_newer);
            st.replace_window(&page, true);
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

    /// Mounts the page beyond one end of the window, if there is one and nothing is loading; the
    /// engine joins it (`window::join_page`) and the other end gives way beyond [`MOUNT_CAP`].
    fn load_more(&self, edge: Edge) {
        let st = self.state;
        let Some(id) = st.current.get_untracked() else {
            return;
        };
        let (more, other) = match edge {
            Edge::Start => (st.has_older, st.has_newer),
            Edge::End => (st.has_newer, st.has_older),
        };
        if st.loading_messages.get_untracked() || !more.get_untracked() {
            return;
        }
        let Some(at) = st.messages.with_untracked(|l| {
            match edge {
                Edge::Start => l.first(),
                Edge::End => l.last(),
            }
            .map(|m| m.seq)
        }) else {
            return;
        };
        st.loading_messages.set(true);
        self.run(move |s, st| async move {
            let page = match edge {
                Edge::Start => s.library().load_page(&id, Some(at), PAGE, None).await,
                Edge::End => s.library().load_page_after(&id, at, PAGE).await,
            };
            st.loading_messages.set(false);
            let page = page?;
            if !st.is_current(&id) {
                return Ok(());
            }
            more.set(match edge {
                Edge::Start => page.has_older,
                Edge::End => page.has_newer,
            });
            let items = MessageItem::from_page(&page);
            let join = |l: &mut Vec<MessageItem>| {
                join_page(l, items, edge, MOUNT_CAP, |a, b| a.id == b.id)
            };
            if st.messages.try_update(join).unwrap_or(0) > 0 {
                other.set(true);
            }
            Ok(())
        });
    }

    /// New: an empty chat, with nothing stored until its first message (which creates the
    /// conversation, see [`Controller::send`]). The conversation open before stays the one the app
    /// reopens, and a draft typed in the new chat is kept for the next New.
    pub fn new_conversation(&self) {
        let st = self.state;
        st.sidebar_open.set(false);
        if st.current.with_untracked(Option::is_none) {
            return;
        }
        self.save_draft();
        st.show_conversation(None);
        st.new_chat_model.set(None);
        self.load_draft(NEW_CHAT_DRAFT.to_string());
        self.refresh_preview();
    }

    /// The model the open conversation (or the new chat) uses from its next turn; `None`: the one in
    /// Settings.
    pub fn pick_model(&self, model: Option<String>) {
        match self.state.current.get_untracked() {
            Some(id) => {
                self.run(move |s, _| async move { Ok(s.library().set_model(&id, model).await?) })
            }
            None => {
                self.state.new_chat_model.set(model);
                self.refresh_preview();
            }
        }
    }

    /// Asks the endpoint for its models for the header's picker (the path Settings' "Test
    /// connection" takes), unless they are listed or being listed.
    pub fn load_models(&self) {
        let st = self.state;
        if st
            .models
            .with_untracked(|m| matches!(m, ModelList::Loading | ModelList::Loaded(_)))
        {
            return;
        }
        st.models.set(ModelList::Loading);
        let settings = st.settings.get_untracked();
        self.run(move |s, st| async move {
            st.models
                .set(match s.preferences().test_connection(&settings).await {
                    Ok(found) => ModelList::Loaded(found),
                    Err(e) => ModelList::Failed(e.to_string()),
                });
            Ok(())
        });
    }

    pub fn rename(&self, id: String, title: String) {
        self.run(move |s, _| async move { Ok(s.library().rename(&id, &title).await?) });
    }

    /// Closes the open conversation (its draft is saved first): the chat shows a new one.
    pub fn close(&self) {
        self.save_draft();
        remember_open(None);
        self.state.show_conversation(None);
        self.load_draft(NEW_CHAT_DRAFT.to_string());
        self.refresh_preview();
    }

    /// Deletes a conversation; the session's `ConversationRemoved` takes it out of the list and
    /// closes it if it is open.
    pub fn delete(&self, id: String) {
        self.run(move |s, _| async move { Ok(s.library().delete(&id).await?) });
    }

    /// Sends the composer text. `/clear` is handled by the composer (it asks first).
    pub fn send(&self, text: String) {
        let ctl = *self;
        let st = self.state;
        st.error.set(None);
        if !st.online.get_untracked() {
            st.fail(OFFLINE_SEND, ErrorKind::Other);
            return;
        }
        if !st.settings.with_untracked(|s| s.has_endpoint()) {
            st.fail(
                "No agent endpoint is set. Open Settings, pick a preset or enter your agent's URL, and save. Your message is kept.",
                ErrorKind::Request,
            );
            st.settings_open.set(true);
            return;
        }
        match st.current.get_untracked() {
            Some(id) => {
                st.draft.set(String::new());
                if st.has_newer.get_untracked() {
                    // The window is far up: go back to the latest messages, where the new one goes
                    // (what arrives while they load is kept, see `replace_window`).
                    st.has_newer.set(false);
                    st.messages.set(Vec::new());
                    ctl.open(id.clone(), None);
                }
                // The session clears the stored draft once the message itself is stored.
                self.run(move |s, _| async move { Ok(s.chat().send(&id, text).await?) });
            }
            None => {
                // The first message of a new chat creates its conversation.
                st.draft.set(String::new());
                let overrides = MemoryOverrides {
                    model: st.new_chat_model.get_untracked(),
                    ..Default::default()
                };
                self.run(move |s, _| async move {
                    let c = s.library().create_conversation(overrides).await?;
                    s.chat().set_draft(NEW_CHAT_DRAFT, "").await.ok();
                    let id = c.id.clone();
                    // The new chat's place in the history becomes the conversation's: Back goes to
                    // the conversation before it, not to an empty chat.
                    replace_route(&id);
                    ctl.open(c.id, None);
                    Ok(s.chat().send(&id, text).await?)
                });
            }
        }
    }

    pub fn stop(&self) {
        if let (Some(id), Some(s)) = (self.state.current.get_untracked(), self.session()) {
            s.chat().stop(&id);
        }
    }

    /// Re-sends the last user turn.
    pub fn retry(&self) {
        let Some(id) = self.state.current.get_untracked() else {
            return;
        };
        self.state.error.set(None);
        self.run(move |s, _| async move { Ok(s.chat().retry(&id).await?) });
    }

    /// Puts a user message's text in the composer to be edited and sent again.
    pub fn start_edit(&self, message_id: String, text: String) {
        self.state.draft.set(text);
        self.state.editing.set(Some(message_id));
    }

    /// Sends `text` in place of user message `message_id`: a new branch (the old one stays a page
    /// away, see `Session::edit`).
    pub fn edit(&self, message_id: String, text: String) {
        let Some(id) = self.state.current.get_untracked() else {
            return;
        };
        self.state.editing.set(None);
        self.state.draft.set(String::new());
        self.state.error.set(None);
        self.run(move |s, _| async move { Ok(s.chat().edit(&id, &message_id, text).await?) });
    }

    /// Asks the agent again for a reply; the earlier reply stays as an alternative.
    pub fn regenerate(&self, reply_id: String) {
        let Some(id) = self.state.current.get_untracked() else {
            return;
        };
        self.state.error.set(None);
        self.run(move |s, _| async move { Ok(s.chat().regenerate(&id, &reply_id).await?) });
    }

    /// Shows another alternative of a message (the pager's ‹ and ›).
    pub fn show_alternative(&self, message_id: String) {
        let Some(id) = self.state.current.get_untracked() else {
            return;
        };
        self.run(move |s, _| async move { Ok(s.chat().show_alternative(&id, &message_id).await?) });
    }

    /// Deletes one message (the view asked first).
    pub fn delete_message(&self, message_id: String) {
        let Some(id) = self.state.current.get_untracked() else {
            return;
        };
        if self.state.editing.get_untracked().as_deref() == Some(message_id.as_str()) {
            self.state.editing.set(None);
        }
        self.run(move |s, _| async move { Ok(s.chat().delete_message(&id, &message_id).await?) });
    }

    /// Clears the open conversation's messages and memory (the composer asked first).
    pub fn clear(&self) {
        let Some(id) = self.state.current.get_untracked() else {
            return;
        };
        let ctl = *self;
        self.run(move |s, _| async move {
            s.library().clear(&id).await?;
            ctl.open(id, None);
            Ok(())
        });
    }

    pub fn reload_memory(&self) {
        let Some(id) = self.state.current.get_untracked() else {
            return;
        };
        self.run(move |s, st| async move {
            let m = s.memory().snapshot(&id).await?;
            if st.is_current(&id) {
                st.memory.set(MemoryView {
                    summary: m.versions.last().cloned(),
                    versions: m.versions,
                    entities: m.entities,
                    failure: m.failure,
                });
            }
            Ok(())
        });
    }

    /// Recomputes what the next request would contain, for the context inspector.
    pub fn refresh_preview(&self) {
        let st = self.state;
        // The new chat (no conversation yet) previews its first message.
        let id = st.current.get_untracked().unwrap_or_default();
        let overrides = MemoryOverrides {
            model: st.new_chat_model.get_untracked(),
            ..Default::default()
        };
        let draft = st.draft.get_untracked();
        self.run(move |s, st| async move {
            let p = s.chat().preview(&id, &draft, overrides).await?;
            if st.current.get_untracked().unwrap_or_default() == id {
                st.preview.set(Some(p));
            }
            Ok(())
        });
    }

    pub fn update_memory_now(&self) {
        let Some(id) = self.state.current.get_untracked() else {
            return;
        };
        self.run(move |s, _| async move { Ok(s.memory().update_memory_now(&id).await?) });
    }

    pub fn restore_summary(&self, version: u32) {
        let Some(id) = self.state.current.get_untracked() else {
            return;
        };
        self.run(move |s, _| async move { Ok(s.memory().restore_summary(&id, version).await?) });
    }

    pub fn save_entity(&self, node: EntityNode) {
        let Some(id) = self.state.current.get_untracked() else {
            return;
        };
        self.run(move |s, _| async move { Ok(s.memory().save_entity(&id, node).await?) });
    }

    pub fn delete_entity(&self, entity_id: String) {
        let Some(id) = self.state.current.get_untracked() else {
            return;
        };
        self.run(move |s, _| async move { Ok(s.memory().delete_entity(&id, &entity_id).await?) });
    }

    pub fn search(&self, query: String) {
        self.state.search_query.set(query.clone());
        if query.trim().is_empty() {
            self.state.search_hits.set(Vec::new());
            self.state.search_titles.set(Vec::new());
            return;
        }
        self.run(move |s, st| async move {
            let found = s.library().search(&query).await?;
            if st.search_query.get_untracked() == query {
                st.search_titles.set(found.titles);
                st.search_hits.set(found.hits);
            }
            Ok(())
        });
    }

    /// Scrolled near the end of the sidebar's window: reads the next page of the list, and unmounts
    /// the top of the window past [`LIST_CAP`].
    pub fn list_more(&self) {
        self.list_scroll(Edge::End);
    }

    /// Scrolled near the top of the sidebar's window while conversations are above it: reads the
    /// page above, and unmounts the bottom of the window past [`LIST_CAP`].
    pub fn list_less(&self) {
        self.list_scroll(Edge::Start);
    }

    /// Reads the list's page beyond `edge` of the sidebar's window, if there is one and nothing is
    /// loading; the engine joins it (`window::join_page`).
    fn list_scroll(&self, edge: Edge) {
        let st = self.state;
        let w = st.list_window.get_untracked();
        let at = st.conversations.with_untracked(|l| {
            match edge {
                Edge::Start => l.first(),
                Edge::End => l.last(),
            }
            .map(|c| (c.updated_at, c.id.clone()))
        });
        let more = match edge {
            Edge::Start => w.above > 0 && at.is_some(),
            Edge::End => w.more_below,
        };
        if w.loading || !more {
            return;
        }
        st.list_window.update(|w| w.loading = true);
        self.run(move |s, st| async move {
            let key = at.as_ref().map(|(u, id)| (*u, id.as_str()));
            let page = match (edge, key) {
                (Edge::Start, Some(before)) => {
                    s.library().list_page_before(before, LIST_PAGE).await
                }
                (Edge::Start, None) => Ok(Vec::new()),
                (Edge::End, after) => s.library().list_page(after, LIST_PAGE).await,
            };
            st.list_window.update(|w| w.loading = false);
            let page = page?;
            let n = page.len();
            let join =
                |l: &mut Vec<Conversation>| join_page(l, page, edge, LIST_CAP, |a, b| a.id == b.id);
            let dropped = st.conversations.try_update(join).unwrap_or(0);
            st.list_window.update(|w| match edge {
                Edge::Start => {
                    w.above = if n < LIST_PAGE {
                        0
                    } else {
                        w.above.saturating_sub(n)
                    };
                    w.more_below |= dropped > 0;
                }
                Edge::End => {
                    w.above += dropped;
                    w.more_below = n == LIST_PAGE;
                }
            });
            Ok(())
        });
    }

    /// The saved sync settings (`None` while the database opens).
    pub fn sync_settings(&self) -> Option<crate::session::SyncSettings> {
        self.session().map(|s| s.sync().settings())
    }

    /// Saves sync settings (`password`: `None` keeps the saved one) and restarts sync.
    pub fn save_sync(
        &self,
        settings: crate::session::SyncSettings,
        password: Option<String>,
        on_done: impl FnOnce(Result<(), String>) + 'static,
    ) {
        self.run(move |s, _| async move {
            on_done(
                s.sync()
                    .save(settings, password)
                    .await
                    .map_err(|e| e.to_string()),
            );
            Ok(())
        });
    }

    /// "Test connection" with these settings: `Err` says what to fix.
    pub fn test_sync(
        &self,
        settings: crate::session::SyncSettings,
        password: Option<String>,
        on_done: impl FnOnce(Result<(), String>) + 'static,
    ) {
        self.run(move |s, _| async move {
            on_done(
                s.sync()
                    .test(&settings, password.as_deref())
                    .await
                    .map_err(|e| e.to_string()),
            );
            Ok(())
        });
    }

    /// Validates and saves settings, and the open conversation's overrides when given; `on_done`
    /// hears how it went. The settings in force change through the session's `SettingsChanged`.
    pub fn save_settings(
        &self,
        settings: Settings,
        overrides: Option<MemoryOverrides>,
        on_done: impl FnOnce(Result<(), String>) + 'static,
    ) {
        let id = self.state.current.get_untracked();
        self.run(move |s, _| async move {
            let mut r = s
                .preferences()
                .save_settings(settings)
                .await
                .map_err(SessionError::from);
            if let (Ok(()), Some(o), Some(id)) = (&r, overrides, id) {
                r = s
                    .library()
                    .set_overrides(&id, o)
                    .await
                    .map_err(SessionError::from);
            }
            on_done(r.map_err(|e| e.to_string()));
            Ok(())
        });
    }

    /// Asks the endpoint of `settings` for its models; `on_done` gets them or what went wrong.
    pub fn test_connection(
        &self,
        settings: Settings,
        on_done: impl FnOnce(Result<Vec<String>, String>) + 'static,
    ) {
        self.run(move |s, _| async move {
            on_done(
                s.preferences()
                    .test_connection(&settings)
                    .await
                    .map_err(|e| e.to_string()),
            );
            Ok(())
        });
    }

    /// Exports the open conversation or everything as a file download, named after the
    /// conversation and the day.
    pub fn export(&self, what: Export) {
        let st = self.state;
        let id = st.current.get_untracked();
        let title = st.current_conversation_untracked().map(|c| c.title);
        self.run(move |s, _| async move {
            let now = now_ms();
            let (name, mime, text) = match (what, id) {
                (Export::ConversationMarkdown, Some(id)) => (
                    export_file_name(title.as_deref(), now, "md"),
                    "text/markdown",
                    s.transfer().export_markdown(&id).await?,
                ),
                (Export::ConversationJson, Some(id)) => (
                    export_file_name(title.as_deref(), now, "json"),
                    "application/json",
                    s.transfer().export_json(Some(&id)).await?,
                ),
                _ => (
                    export_file_name(None, now, "json"),
                    "application/json",
                    s.transfer().export_json(None).await?,
                ),
            };
            save_file(&name, mime, &text);
            Ok(())
        });
    }

    /// Reads a backup or another app's export and puts it in `state.import` for the user to
    /// confirm, showing its progress meanwhile. New conversations arrive as session events.
    pub fn import_file(&self, file: web_sys::File) {
        let cancel = self.start_import();
        self.run(move |s, st| async move {
            let step = s.transfer().open_import(file, &cancel).await;
            st.import.set(ImportState::Idle);
            match step? {
                ImportStep::Preview(p) => st.import.set(ImportState::Preview(p)),
                ImportStep::Cancelled(notice) => st.notice.set(Some(notice)),
            }
            Ok(())
        });
    }

    /// Writes the import waiting for confirmation, showing its progress.
    pub fn confirm_import(&self) {
        // Taken, not cloned: a preview holds every record of the file.
        let taken = self.state.import.try_update_untracked(std::mem::take);
        let p = match taken {
            Some(ImportState::Preview(p)) => p,
            Some(other) => return self.state.import.set(other),
            None => return,
        };
        let cancel = self.start_import();
        self.run(move |s, st| async move {
            let done = s.transfer().confirm_import(p, &cancel).await;
            st.import.set(ImportState::Idle);
            let (report, ids) = done?;
            st.notice.set(Some(report));
            st.build_offer.set(ids);
            Ok(())
        });
    }

    /// Builds the memory of `ids` from their history, in the background (see `session::catchup`).
    /// An import's offer stays until its build is done (a cancelled one can be taken up again).
    pub fn build_memory(&self, ids: Vec<String>) {
        // How the last build ended is not this one's.
        self.state.memory_build.set(None);
        self.run(move |s, _| async move {
            s.memory().build_memory(ids).await;
            Ok(())
        });
    }

    /// Builds the open conversation's memory from its history.
    pub fn build_memory_current(&self) {
        if let Some(id) = self.state.current.get_untracked() {
            self.build_memory(vec![id]);
        }
    }

    /// Cancels the memory build; what was built stays.
    pub fn cancel_memory_build(&self) {
        if let Some(s) = self.session() {
            s.memory().cancel_memory_build();
        }
    }

    /// The import shows as running (reading, before any progress arrives); its Cancel's switch.
    fn start_import(&self) -> ImportCancel {
        let cancel = ImportCancel::default();
        let reading = Progress {
            phase: Phase::Reading,
            done: 0,
            total: 0,
        };
        self.state
            .import
            .set(ImportState::Running(reading, cancel.clone()));
        cancel
    }

    /// Cancel on the preview (nothing was written) or on a running import (it stops at its next
    /// slice and writes nothing).
    pub fn cancel_import(&self) {
        match self.state.import.get_untracked() {
            ImportState::Running(_, cancel) => cancel.store(true, Ordering::Relaxed),
            ImportState::Preview(_) => self.state.import.set(ImportState::Idle),
            ImportState::Idle => {}
        }
    }

    /// Puts the open conversation's stored draft (`id`; [`NEW_CHAT_DRAFT`] for the new chat) into the
    /// composer, unless something was typed there while it was read (what the user typed wins, and is
    /// what gets saved from then on).
    fn load_draft(&self, id: String) {
        self.run(move |s, st| async move {
            let stored = s.chat().draft(&id).await;
            if st.current.get_untracked().unwrap_or_default() != id {
                return Ok(());
            }
            if st.draft.with_untracked(String::is_empty) {
                st.draft.set(stored.unwrap_or_default());
            }
            st.draft_of.set(Some(id));
            Ok(())
        });
    }

    /// Saves the composer draft of the open conversation, or of the new chat (once its stored draft
    /// has been loaded).
    pub fn save_draft(&self) {
        let st = self.state;
        let Some(s) = self.session() else {
            return;
        };
        let id = st.current.get_untracked().unwrap_or_default();
        if st
            .draft_of
            .with_untracked(|d| d.as_deref() != Some(id.as_str()))
        {
            return;
        }
        let text = st.draft.get_untracked();
        spawn_local(async move {
            s.chat().set_draft(&id, &text).await.ok();
        });
    }

    pub fn refresh_storage(&self) {
        self.run(|s, st| async move {
            st.storage.set(Some(s.preferences().storage().await?));
            Ok(())
        });
    }

    /// True when the last assistant message of the open conversation failed or was cut off.
    pub fn can_retry(&self) -> bool {
        let st = self.state;
        !st.current_streaming()
            && st.messages.with(|l| {
                l.last().is_some_and(|m| {
                    matches!(
                        m.status.get(),
                        MessageStatus::Error | MessageStatus::Interrupted
                    ) || m.role == crate::engine::model::Role::User
                })
            })
    }
}

/// Writes `#/c/<id>` (a history entry, so the back button works), or clears it.
pub fn set_route(id: Option<&str>) {
    let Some(w) = web_sys::window() else { return };
    let want = id.map(|i| format!("#/c/{i}")).unwrap_or_default();
    let have = w.location().hash().unwrap_or_default();
    if have != want {
        if want.is_empty() {
            let _ = w.history().and_then(|h| {
                let path = w.location().pathname().unwrap_or_default();
                h.push_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&path))
            });
        } else {
            let _ = w.location().set_hash(&want);
        }
    }
}

/// Writes `#/c/<id>` in place of the current history entry.
fn replace_route(id: &str) {
    let Some(w) = web_sys::window() else { return };
    let _ = w.history().and_then(|h| {
        h.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&format!("#/c/{id}")))
    });
}

/// The conversation id in the URL (`#/c/<id>`), if any.
pub fn route() -> Option<String> {
    let hash = web_sys::window()?.location().hash().ok()?;
    let id = hash.strip_prefix("#/c/")?;
    let id = js_sys::decode_uri_component(id).ok()?.as_string()?;
    (!id.is_empty()).then_some(id)
}

/// Tells the page that the first screen (composer and conversation list) is there: index.html
/// registers the service worker then, so its precaching download does not compete with the start.
fn announce_first_screen() {
    if let (Some(w), Ok(e)) = (
        web_sys::window(),
        web_sys::Event::new("memoire-first-screen"),
    ) {
        let _ = w.dispatch_event(&e);
    }
}
