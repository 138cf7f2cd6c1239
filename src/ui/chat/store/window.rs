//! The open conversation's window of messages, the part of the message list's store
//! (`messages.rs`) that holds what the list mounts: the messages (oldest first, each with its
//! content, status, meta and place among its alternatives as signals of its own, so a streaming
//! token re-renders one message), and whether older or newer pages exist or one is loading. Where a
//! stored message goes is the engine's (`engine::window`); this module only applies it. Its writers
//! are that store's alone (`pub(super)`); views read it through that store. Must not import
//! `crate::store`, `crate::transport` or the session handle.

use crate::engine::branch::Alternatives;
use crate::engine::model::{Message, MessageMeta, MessageStatus, Role};
use crate::engine::window::{join_page, place, Edge, Placement};
use crate::session::Page;
use leptos::prelude::*;
use std::collections::HashMap;

/// Most messages mounted at once: scrolling further unmounts pages at the other end, so even
/// 10,000 messages keep a small DOM.
pub const MOUNT_CAP: usize = 4 * PAGE;

/// How many messages are mounted when a conversation opens, and per "load older" step.
pub const PAGE: usize = 60;

/// One message as the chat pane shows it. Content and status are signals of their own (its
/// [`MessageState`]) so a streaming token re-renders one message, never the list.
#[derive(Clone)]
pub struct MessageItem {
    /// The message's id.
    pub id: String,
    /// Its place in the conversation.
    pub seq: u64,
    /// Who wrote it.
    pub role: Role,
    /// When it was written.
    pub created_at: i64,
    state: MessageState,
}

/// What of a message changes while it is shown: its text, status, meta and place among its
/// alternatives. `Copy`, so a view's closures each hold it; its signals are private.
#[derive(Clone, Copy)]
pub struct MessageState {
    content: RwSignal<String>,
    status: RwSignal<MessageStatus>,
    meta: RwSignal<MessageMeta>,
    /// Where it stands among its alternatives (regenerated replies, edits), if it has any.
    alternatives: RwSignal<Option<Alternatives>>,
}

impl MessageItem {
    fn from_message(m: &Message) -> Self {
        MessageItem {
            id: m.id.clone(),
            seq: m.seq,
            role: m.role,
            created_at: m.created_at,
            state: MessageState {
                content: RwSignal::new(m.content.clone()),
                status: RwSignal::new(m.status),
                meta: RwSignal::new(m.meta.clone()),
                alternatives: RwSignal::new(None),
            },
        }
    }

    /// The items of a page of messages, each with where it stands among its alternatives.
    fn from_page(page: &Page) -> Vec<MessageItem> {
        page.messages
            .iter()
            .map(|m| {
                let item = MessageItem::from_message(m);
                item.state
                    .alternatives
                    .set(page.alternatives.get(&m.id).cloned());
                item
            })
            .collect()
    }

    /// What of it changes while it is shown.
    pub fn state(&self) -> MessageState {
        self.state
    }

    fn apply(&self, content: &str, status: MessageStatus, meta: Option<&MessageMeta>) {
        self.state.apply(content, status, meta);
    }
}

impl MessageState {
    // Readers: tracked (inside a reactive closure it re-runs on a change) unless untracked.

    /// Its text (growing while it streams).
    pub fn content(&self) -> String {
        self.content.get()
    }

    /// Reads its text without a copy.
    pub fn with_content<R>(&self, f: impl FnOnce(&str) -> R) -> R {
        self.content.with(|c| f(c))
    }

    /// Subscribes to its text.
    pub fn track_content(&self) {
        self.content.track();
    }

    /// [`Self::content`] without subscribing (for event handlers).
    pub fn content_untracked(&self) -> String {
        self.content.get_untracked()
    }

    /// Its status.
    pub fn status(&self) -> MessageStatus {
        self.status.get()
    }

    /// [`Self::status`] without subscribing (for event handlers).
    pub fn status_untracked(&self) -> MessageStatus {
        self.status.get_untracked()
    }

    /// Reads its meta: tools, usage, error, model.
    pub fn with_meta<R>(&self, f: impl FnOnce(&MessageMeta) -> R) -> R {
        self.meta.with(f)
    }

    /// Where it stands among its alternatives, if it has any.
    pub fn alternatives(&self) -> Option<Alternatives> {
        self.alternatives.get()
    }

    /// Reads where it stands among its alternatives, without subscribing (for event handlers).
    pub fn with_alternatives_untracked<R>(&self, f: impl FnOnce(&Option<Alternatives>) -> R) -> R {
        self.alternatives.with_untracked(f)
    }

    /// Applies a newer state of the message; only what changed is set.
    fn apply(&self, content: &str, status: MessageStatus, meta: Option<&MessageMeta>) {
        if self.content.with_untracked(|c| c != content) {
            self.content.set(content.to_string());
        }
        if self.status.get_untracked() != status {
            self.status.set(status);
        }
        if let Some(meta) = meta {
            if self.meta.with_untracked(|m| m != meta) {
                self.meta.set(meta.clone());
            }
        }
    }
}

/// The mounted window of the open conversation's messages. `Copy`; part of the messages' store.
#[derive(Clone, Copy)]
pub struct MessageWindow {
    /// Oldest first.
    messages: RwSignal<Vec<MessageItem>>,
    /// True while older messages exist above the mounted window.
    has_older: RwSignal<bool>,
    /// The window ends before the latest message (the user went far up, or opened a search hit).
    has_newer: RwSignal<bool>,
    loading: RwSignal<bool>,
}

impl MessageWindow {
    /// An empty window.
    pub fn new() -> Self {
        MessageWindow {
            messages: RwSignal::new(Vec::new()),
            has_older: RwSignal::new(false),
            has_newer: RwSignal::new(false),
            loading: RwSignal::new(false),
        }
    }

    /// Reads the mounted messages, oldest first (tracked).
    pub fn with_messages<R>(&self, f: impl FnOnce(&[MessageItem]) -> R) -> R {
        self.messages.with(|l| f(l))
    }

    /// True while older messages exist above the window (tracked).
    pub fn has_older(&self) -> bool {
        self.has_older.get()
    }

    /// True while newer messages exist below the window (tracked).
    pub fn has_newer(&self) -> bool {
        self.has_newer.get()
    }

    /// True while a page is being read (tracked).
    pub fn loading(&self) -> bool {
        self.loading.get()
    }

    /// A page is (or is no longer) being read.
    pub(super) fn set_loading(&self, on: bool) {
        self.loading.set(on);
    }

    /// Nothing mounted, nothing older or newer to load.
    pub(super) fn clear(&self) {
        self.messages.set(Vec::new());
        self.has_older.set(false);
        self.has_newer.set(false);
    }

    /// Mounts `page` as the window, with what lies beyond its ends. Messages already mounted keep
    /// their view (their signals are updated in place), so reloading a window never rebuilds
    /// unchanged nodes and an edited message shows its new text.
    /// With a page that ends at the latest message, messages shown after the page's last one (added
    /// while the page was being read) stay. After a change of branch (`branch_changed`) they go (they
    /// were the old branch's), and messages already mounted keep their state: every save reached
    /// them, so it is at least as new as the page's (a reply that finished while the page was read).
    pub(super) fn replace(&self, page: &Page, branch_changed: bool) {
        self.has_older.set(page.has_older);
        self.has_newer.set(page.has_newer);
        let latest = !page.has_newer && !branch_changed;
        let (alternatives, page) = (&page.alternatives, page.messages.as_slice());
        let old: HashMap<String, MessageItem> = self
            .messages
            .with_untracked(|l| l.iter().map(|m| (m.id.clone(), m.clone())).collect());
        let page_end = page.last().map_or(0, |m| m.seq);
        let arrived: Vec<MessageItem> = self.messages.with_untracked(|l| {
            l.iter()
                .filter(|m| latest && m.seq > page_end && !page.iter().any(|p| p.id == m.id))
                .cloned()
                .collect()
        });
        let items = page
            .iter()
            .map(|m| {
                let item = match old.get(&m.id) {
                    Some(item) => {
                        if !branch_changed {
                            item.apply(&m.content, m.status, Some(&m.meta));
                        }
                        item.clone()
                    }
                    None => MessageItem::from_message(m),
                };
                let alt = alternatives.get(&m.id);
                if item
                    .state
                    .alternatives
                    .with_untracked(|a| a.as_ref() != alt)
                {
                    item.state.alternatives.set(alt.cloned());
                }
                item
            })
            .chain(arrived)
            .collect();
        self.messages.set(items);
    }

    /// The window is far up and a message is sent: nothing stays mounted until the latest page is
    /// read (what arrives meanwhile is kept, see [`Self::replace`]). False when it was not far up.
    pub(super) fn leave_far_up(&self) -> bool {
        if !self.has_newer.get_untracked() {
            return false;
        }
        self.has_newer.set(false);
        self.messages.set(Vec::new());
        true
    }

    /// Shows a stored message of the open conversation, per `engine::window::place`; true when the
    /// window missed messages before it and must be reloaded.
    pub(super) fn take(&self, m: &Message) -> bool {
        let (last_seq, shown) = self.messages.with_untracked(|l| {
            (
                l.last().map(|x| x.seq),
                l.iter().rev().any(|x| x.id == m.id),
            )
        });
        let placement = place(last_seq, !self.has_newer.get_untracked(), m.seq, shown);
        if placement == Placement::Beyond {
            return false;
        }
        if shown {
            let item = self
                .messages
                .with_untracked(|l| l.iter().rev().find(|x| x.id == m.id).cloned());
            if let Some(item) = item {
                item.apply(&m.content, m.status, Some(&m.meta));
            }
        } else {
            self.messages.update(|l| {
                let at = l.iter().rposition(|x| x.seq < m.seq).map_or(0, |i| i + 1);
                l.insert(at, MessageItem::from_message(m));
            });
        }
        placement == Placement::Behind
    }

    /// The seq beyond which the page past `edge` starts, if there is such a page and nothing is
    /// loading.
    pub(super) fn edge_to_load(&self, edge: Edge) -> Option<u64> {
        let more = match edge {
            Edge::Start => self.has_older,
            Edge::End => self.has_newer,
        };
        if self.loading.get_untracked() || !more.get_untracked() {
            return None;
        }
        self.messages.with_untracked(|l| {
            match edge {
                Edge::Start => l.first(),
                Edge::End => l.last(),
            }
            .map(|m| m.seq)
        })
    }

    /// Mounts the page read beyond `edge`; the engine joins it (`window::join_page`) and the other
    /// end gives way beyond [`MOUNT_CAP`].
    pub(super) fn join(&self, edge: Edge, page: &Page) {
        let (more, other) = match edge {
            Edge::Start => (self.has_older, self.has_newer),
            Edge::End => (self.has_newer, self.has_older),
        };
        more.set(match edge {
            Edge::Start => page.has_older,
            Edge::End => page.has_newer,
        });
        let items = MessageItem::from_page(page);
        let join =
            |l: &mut Vec<MessageItem>| join_page(l, items, edge, MOUNT_CAP, |a, b| a.id == b.id);
        if self.messages.try_update(join).unwrap_or(0) > 0 {
            other.set(true);
        }
    }
}

impl Default for MessageWindow {
    fn default() -> Self {
        Self::new()
    }
}
