//! The message list's store: which conversation's messages are mounted, its window of them
//! (`window.rs`: what is shown, older and newer pages), the message to scroll to, and the paging
//! between pages. Its signals are private: the list reads them and calls its actions; what else
//! opening a conversation changes is `ui/flow.rs`'s. Must not import `crate::store` or
//! `crate::transport`.

use super::window::{MessageItem, MessageWindow, PAGE};
use crate::engine::model::Message;
use crate::engine::send::retry_offered;
use crate::engine::window::Edge;
use crate::ui::backend::Backend;
use leptos::prelude::*;

/// The open conversation's mounted messages and the paging through them. `Copy`, in the `Stores`
/// context.
#[derive(Clone, Copy)]
pub struct MessagesStore {
    backend: Backend,
    /// The conversation whose messages are mounted (`None`: the new chat).
    of: RwSignal<Option<String>>,
    window: MessageWindow,
    /// Message to scroll to after opening a conversation from a search hit.
    focus: RwSignal<Option<String>>,
}

impl MessagesStore {
    /// No conversation's messages mounted.
    pub fn new(backend: Backend) -> Self {
        MessagesStore {
            backend,
            of: RwSignal::new(None),
            window: MessageWindow::new(),
            focus: RwSignal::new(None),
        }
    }

    /// Reads the mounted messages, oldest first (tracked).
    pub fn with_messages<R>(&self, f: impl FnOnce(&[MessageItem]) -> R) -> R {
        self.window.with_messages(f)
    }

    /// True while older messages exist above the mounted ones (tracked).
    pub fn has_older(&self) -> bool {
        self.window.has_older()
    }

    /// True while newer messages exist below the mounted ones (tracked).
    pub fn has_newer(&self) -> bool {
        self.window.has_newer()
    }

    /// True while a page of messages is being read (tracked).
    pub fn loading(&self) -> bool {
        self.window.loading()
    }

    /// The message to scroll to, if any (tracked).
    pub fn focus(&self) -> Option<String> {
        self.focus.get()
    }

    /// The message list scrolled to the focused message.
    pub fn focused(&self) {
        self.focus.set(None);
    }

    /// True when Retry sits on message `message_id`: the last one, when `engine::send::retry_offered`
    /// says so while a reply is (or is not) being written (`streaming`). Tracked.
    pub fn retry_on(&self, message_id: &str, streaming: bool) -> bool {
        self.window.with_messages(|l| {
            l.last().is_some_and(|last| {
                last.id == message_id
                    && retry_offered(Some((last.role, last.state().status())), streaming)
            })
        })
    }

    /// Shows conversation `id`'s messages (`None`: the new chat's), none mounted yet.
    pub fn show(&self, id: Option<String>) {
        self.of.set(id);
        self.window.clear();
        self.focus.set(None);
    }

    /// Mounts conversation `id`'s last page of messages (or, with `focus`, the page around that
    /// message, which the list scrolls to); `drawn` runs on the frame after they are mounted.
    pub fn open(&self, id: String, focus: Option<String>, drawn: impl FnOnce() + 'static) {
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
            if !this.mounts(&id) {
                return Ok(());
            }
            this.window.replace(&page, false);
            request_animation_frame(drawn);
            Ok(())
        });
    }

    /// Mounts the last page of conversation `id` again after its branch changed: what the old
    /// branch showed goes (a reply still streaming on the new one comes back with its next save).
    pub fn show_branch(&self, id: String) {
        let this = *self;
        self.backend.run(move |s| async move {
            let page = s.library().load_page(&id, None, PAGE, None).await?;
            if this.mounts(&id) {
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
        let Some(id) = self.of.get_untracked() else {
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
            if this.mounts(&id) {
                this.window.join(edge, &page);
            }
            Ok(())
        });
    }

    /// True when conversation `id`'s messages are the ones mounted (untracked).
    fn mounts(&self, id: &str) -> bool {
        self.of.with_untracked(|o| o.as_deref() == Some(id))
    }

    /// A message is about to be sent: true when the window was far up and must go back to the
    /// latest messages, where the new one goes.
    pub fn leave_far_up(&self) -> bool {
        self.window.leave_far_up()
    }

    /// A message stored or changed (`MessageAdded`, `MessageProgress`): shown if it belongs in the
    /// window; true when the window missed messages before it and must be reloaded.
    pub fn take_message(&self, m: &Message) -> bool {
        self.mounts(&m.conversation_id) && self.window.take(m)
    }

    /// A conversation's messages were cleared (`MessagesCleared`).
    pub fn cleared(&self, id: &str) {
        if self.mounts(id) {
            self.window.clear();
        }
    }
}
