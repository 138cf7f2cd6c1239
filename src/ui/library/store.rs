//! The library store: the sidebar's window of the conversation list (most recent first, read a page
//! at a time, at most [`LIST_CAP`] mounted), the search (query, matching titles and messages), and
//! the record of the open conversation when the window does not hold it. Its signals are private:
//! views read them and call its actions, each making its session calls through the backend. Must
//! not import `crate::store` or `crate::transport`, nor another store.

use crate::engine::format::conversation_to_reopen;
use crate::engine::model::Conversation;
use crate::engine::window::{join_page, upsert_listed, Edge};
use crate::session::{SearchHit, SessionError};
use crate::ui::backend::Backend;
use crate::ui::route::{last_open, route};
use leptos::prelude::*;

/// Most conversations mounted in the sidebar at once (what is on screen plus a margin; the list
/// is read a page of a third of this at a time).
pub const LIST_CAP: usize = 90;

/// Conversations read per page of the sidebar's list.
pub const LIST_PAGE: usize = 30;

/// Where the sidebar's window of the conversation list sits in the whole list (most recent first):
/// only the window is read and mounted; scrolling moves it a page at a time.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ListWindow {
    /// Conversations above the window (unmounted after scrolling down).
    pub above: usize,
    /// More conversations exist below the window.
    pub more_below: bool,
    /// A page is being read.
    pub loading: bool,
}

/// What the first screen shows once the first page of the list is read.
#[derive(Clone, Debug, PartialEq)]
pub enum FirstScreen {
    /// The conversation to reopen (`engine::format::conversation_to_reopen`).
    Reopen(String),
    /// The new chat.
    NewChat,
    /// The list could not be read (the banner says why).
    Failed,
}

/// The conversation list and the search. `Copy`, provided as context.
#[derive(Clone, Copy)]
pub struct LibraryStore {
    backend: Backend,
    /// The sidebar's window of the conversation list, most recent first.
    conversations: RwSignal<Vec<Conversation>>,
    window: RwSignal<ListWindow>,
    /// The open conversation's record when the window does not hold it (opened from a search or
    /// the address of an old conversation).
    opened: RwSignal<Option<Conversation>>,
    query: RwSignal<String>,
    hits: RwSignal<Vec<SearchHit>>,
    /// Conversations whose title matches the search.
    titles: RwSignal<Vec<Conversation>>,
}

impl LibraryStore {
    /// An empty list until the first page is read.
    pub fn new(backend: Backend) -> Self {
        LibraryStore {
            backend,
            conversations: RwSignal::new(Vec::new()),
            window: RwSignal::new(ListWindow::default()),
            opened: RwSignal::new(None),
            query: RwSignal::new(String::new()),
            hits: RwSignal::new(Vec::new()),
            titles: RwSignal::new(Vec::new()),
        }
    }

    /// The mounted window of the list, most recent first (tracked: read it inside a reactive
    /// closure).
    pub fn conversations(&self) -> Vec<Conversation> {
        self.conversations.get()
    }

    /// True when the mounted window of the list is empty.
    pub fn is_empty(&self) -> bool {
        self.conversations.with(Vec::is_empty)
    }

    /// How many conversations are mounted, without subscribing.
    pub fn mounted_untracked(&self) -> usize {
        self.conversations.with_untracked(Vec::len)
    }

    /// Where the window sits in the whole list.
    pub fn list_window(&self) -> ListWindow {
        self.window.get()
    }

    /// [`Self::list_window`] without subscribing; `None` once the store is gone (read from an
    /// animation frame).
    pub fn try_list_window_untracked(&self) -> Option<ListWindow> {
        self.window.try_get_untracked()
    }

    /// Subscribes to the mounted window and its place (an effect that looks again after each page).
    pub fn track_list(&self) {
        self.conversations.track();
        self.window.track();
    }

    /// The search's query.
    pub fn query(&self) -> String {
        self.query.get()
    }

    /// Reads the messages that match the search.
    pub fn with_hits<R>(&self, f: impl FnOnce(&[SearchHit]) -> R) -> R {
        self.hits.with(|h| f(h))
    }

    /// The conversations whose title matches the search.
    pub fn titles(&self) -> Vec<Conversation> {
        self.titles.get()
    }

    /// Conversation `id` as the list (or, outside its window, the opened record) has it.
    pub fn record(&self, id: &str) -> Option<Conversation> {
        self.conversations
            .with(|l| l.iter().find(|c| c.id == id).cloned())
            .or_else(|| self.opened.get().filter(|c| c.id == id))
    }

    /// The first page of the list, then the conversation to show (`engine::format::
    /// conversation_to_reopen`); `shown` hears which. Only one page is read: a library of 10,000
    /// opens like an empty one.
    pub fn first_screen(&self, shown: impl FnOnce(FirstScreen) + 'static) {
        let this = *self;
        self.backend.run(move |s| async move {
            let read = async {
                let list = s.library().list_page(None, LIST_PAGE).await?;
                let last = match last_open() {
                    Some(id) if !list.iter().any(|c| c.id == id) => {
                        s.library().conversation(&id).await?.map(|c| c.id)
                    }
                    other => other,
                };
                Ok::<_, SessionError>((list, last))
            };
            match read.await {
                Ok((list, last)) => {
                    shown(this.first_page(list, last));
                    Ok(())
                }
                Err(e) => {
                    shown(FirstScreen::Failed);
                    Err(e)
                }
            }
        });
    }

    /// Mounts the first page of the list; the conversation to reopen, of this page or `last`.
    fn first_page(&self, list: Vec<Conversation>, last: Option<String>) -> FirstScreen {
        let reopen = conversation_to_reopen(route().as_deref(), last.as_deref(), |id| {
            list.iter().any(|c| c.id == id) || last.as_deref() == Some(id)
        });
        self.window.set(ListWindow {
            more_below: list.len() == LIST_PAGE,
            ..ListWindow::default()
        });
        self.conversations.set(list);
        reopen.map_or(FirstScreen::NewChat, FirstScreen::Reopen)
    }

    /// Keeps the record of conversation `id`, being opened, apart from the window, which may scroll
    /// it away (or never held it): from the window, else read.
    pub fn hold_open(&self, id: &str) {
        let opened = self.opened;
        let held = self
            .conversations
            .with_untracked(|l| l.iter().find(|c| c.id == id).cloned());
        let missing = held.is_none();
        opened.set(held);
        if missing {
            let id = id.to_string();
            self.backend.run(move |s| async move {
                opened.set(s.library().conversation(&id).await?);
                Ok(())
            });
        }
    }

    /// Renames a conversation; the change arrives as a session event.
    pub fn rename(&self, id: String, title: String) {
        self.backend
            .run(move |s| async move { Ok(s.library().rename(&id, &title).await?) });
    }

    /// Deletes a conversation; the session's `ConversationRemoved` takes it out of the list (and
    /// closes it if it is open).
    pub fn delete(&self, id: String) {
        self.backend
            .run(move |s| async move { Ok(s.library().delete(&id).await?) });
    }

    /// Searches titles and message text (an empty query ends the search).
    pub fn search(&self, query: String) {
        let (q, hits, titles) = (self.query, self.hits, self.titles);
        q.set(query.clone());
        if query.trim().is_empty() {
            hits.set(Vec::new());
            titles.set(Vec::new());
            return;
        }
        self.backend.run(move |s| async move {
            let found = s.library().search(&query).await?;
            if q.get_untracked() == query {
                titles.set(found.titles);
                hits.set(found.hits);
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
        let w = self.window.get_untracked();
        let at = self.conversations.with_untracked(|l| {
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
        self.window.update(|w| w.loading = true);
        let this = *self;
        self.backend.run(move |s| async move {
            let key = at.as_ref().map(|(u, id)| (*u, id.as_str()));
            let page = match (edge, key) {
                (Edge::Start, Some(before)) => {
                    s.library().list_page_before(before, LIST_PAGE).await
                }
                (Edge::Start, None) => Ok(Vec::new()),
                (Edge::End, after) => s.library().list_page(after, LIST_PAGE).await,
            };
            this.window.update(|w| w.loading = false);
            this.join(edge, page?);
            Ok(())
        });
    }

    /// Joins a page read beyond `edge` to the window.
    fn join(&self, edge: Edge, page: Vec<Conversation>) {
        let n = page.len();
        let join =
            |l: &mut Vec<Conversation>| join_page(l, page, edge, LIST_CAP, |a, b| a.id == b.id);
        let dropped = self.conversations.try_update(join).unwrap_or(0);
        self.window.update(|w| match edge {
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
    }

    /// Conversations stored or changed (here or in another tab): each in the window where its
    /// activity puts it, unless that is above or below the window (then the page that holds it is
    /// read when scrolled to). One update (one render of the list) for the whole batch; an import
    /// reports thousands.
    pub fn changed(&self, cs: Vec<Conversation>) {
        let opened = self
            .opened
            .with_untracked(|o| o.as_ref().map(|o| o.id.clone()));
        if let Some(c) = cs.iter().rev().find(|c| Some(&c.id) == opened.as_ref()) {
            self.opened.set(Some(c.clone()));
        }
        let w = self.window.get_untracked();
        let mut more_below = w.more_below;
        self.conversations
            .update(|list| more_below = upsert_listed(list, cs, w.above, w.more_below, LIST_CAP));
        if more_below && !w.more_below {
            self.window.update(|w| w.more_below = true);
        }
    }

    /// A conversation deleted (here or in another tab) leaves the list and the search results.
    pub fn removed(&self, id: &str) {
        self.conversations.update(|l| l.retain(|c| c.id != id));
        self.titles.update(|l| l.retain(|c| c.id != id));
    }
}
