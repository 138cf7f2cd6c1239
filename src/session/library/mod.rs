//! The library ([`Library`]): the conversation list a page at a time, search, opening a
//! conversation's pages of messages, and creating, renaming, deleting and clearing conversations.
//! Which page and which messages are the engine's (`engine::page`). Search is behind split point
//! `search_results`, deleting and clearing behind `edits`. Must not import `ui`.

use crate::engine::model::{Conversation, MemoryOverrides, Millis, Role};
use crate::engine::page::{self, page_of_branch, Page, PageAsk};
use crate::engine::tabs::Change;
use crate::session::chat::{Chat, ChatError, NEW_CHAT_DRAFT};
use crate::session::shared::error::{from_read_error, Boxed, NO_CONVERSATION};
use crate::session::shared::{new_id, now, Core};
use crate::store::{ConversationPatch, StoreError};
use std::rc::Rc;

/// Most search hits returned.
const SEARCH_LIMIT: usize = 50;

/// What can go wrong in a library call. Every message says what to do.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LibraryError {
    #[error("{0}")]
    Store(#[from] StoreError),
    #[error("{}", NO_CONVERSATION)]
    NoConversation,
    /// A chunk of the app it needs (search's, or `edits`) could not be fetched; the next try
    /// fetches it again.
    #[error("{}", crate::session::shared::error::UNAVAILABLE)]
    Unavailable,
    /// A new conversation's first message did not go (`Library::start_conversation`).
    #[error(transparent)]
    Chat(#[from] ChatError),
}

impl From<wasm_split_helpers::SplitLoaderError> for LibraryError {
    fn from(_: wasm_split_helpers::SplitLoaderError) -> Self {
        LibraryError::Unavailable
    }
}

from_read_error!(LibraryError);

/// A search result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchHit {
    pub conversation_id: String,
    /// Its conversation's title.
    pub title: String,
    pub message_id: String,
    /// Who wrote the message, for the row's "You" or "Agent".
    pub role: Option<Role>,
    pub snippet: String,
}

/// What a search found: conversations by title, and messages.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchResults {
    pub titles: Vec<Conversation>,
    pub hits: Vec<SearchHit>,
}

/// The library service. One per page.
pub struct Library {
    core: Rc<Core>,
    /// Deleting or clearing a conversation stops its turn.
    chat: Rc<Chat>,
}

impl Library {
    pub(crate) fn new(core: Rc<Core>, chat: Rc<Chat>) -> Self {
        Library { core, chat }
    }

    /// A page of the conversation list (most recent activity first): up to `limit` conversations
    /// after `after` (a conversation's `updated_at` and id), or from the top.
    pub async fn list_page(
        &self,
        after: Option<(Millis, &str)>,
        limit: usize,
    ) -> Result<Vec<Conversation>, LibraryError> {
        Ok(self
            .core
            .store
            .list_conversations_after(after, limit)
            .await?)
    }

    /// The page of the list just above `before`, most recent first.
    pub async fn list_page_before(
        &self,
        before: (Millis, &str),
        limit: usize,
    ) -> Result<Vec<Conversation>, LibraryError> {
        Ok(self
            .core
            .store
            .list_conversations_before(before, limit)
            .await?)
    }

    pub async fn conversation(&self, id: &str) -> Result<Option<Conversation>, LibraryError> {
        Ok(self.core.store.get_conversation(id).await?)
    }

    /// Stores a new conversation, with the choices made in the new chat before its first message
    /// (the model picked in the header). The app calls this for a first message, never for New.
    pub async fn create_conversation(
        &self,
        memory_overrides: MemoryOverrides,
    ) -> Result<Conversation, LibraryError> {
        let t = now();
        let c = Conversation {
            id: new_id("c"),
            title: String::new(),
            title_is_custom: false,
            created_at: t,
            updated_at: t,
            message_count: 0,
            endpoint_profile_id: Some(self.core.settings.borrow().endpoint.id.clone()),
            remote_handle: None,
            last_path: None,
            memory_overrides,
        };
        self.core.store.create_conversation(&c).await?;
        self.core.emit(Change::Conversation(c.clone()));
        Ok(c)
    }

    /// A new chat's first message: creates its conversation, empties the new chat's stored draft,
    /// lets the caller show the conversation (`opened`, before the turn's first event), then sends
    /// the message in it.
    pub async fn start_conversation(
        &self,
        memory_overrides: MemoryOverrides,
        text: String,
        attachments: Vec<crate::engine::model::Attachment>,
        opened: impl FnOnce(&Conversation),
    ) -> Result<(), LibraryError> {
        let c = self.create_conversation(memory_overrides).await?;
        self.chat.set_draft(NEW_CHAT_DRAFT, "").await.ok();
        opened(&c);
        Ok(self.chat.send_with(&c.id, text, attachments).await?)
    }

    pub async fn rename(&self, id: &str, title: &str) -> Result<(), LibraryError> {
        let c = self
            .core
            .store
            .rename_conversation(id, title.trim(), now())
            .await?;
        self.core.emit(Change::Conversation(c));
        Ok(())
    }

    pub async fn set_overrides(&self, id: &str, o: MemoryOverrides) -> Result<(), LibraryError> {
        let patch = ConversationPatch {
            memory_overrides: Some(o),
            ..Default::default()
        };
        Ok(self.core.patch_conversation(id, &patch).await?)
    }

    /// The model a conversation's next turns use (`None`: the one in Settings).
    pub async fn set_model(&self, id: &str, model: Option<String>) -> Result<(), LibraryError> {
        self.change_overrides(id, |o| o.model = model).await
    }

    /// "Use memory about me" in this conversation.
    pub async fn set_user_memory(&self, id: &str, on: bool) -> Result<(), LibraryError> {
        self.change_overrides(id, |o| o.user_memory = Some(on))
            .await
    }

    /// Changes one thing in a conversation's overrides, read from the store so a change made
    /// elsewhere in them is kept.
    async fn change_overrides(
        &self,
        id: &str,
        change: impl FnOnce(&mut MemoryOverrides),
    ) -> Result<(), LibraryError> {
        let mut o = self.core.conversation(id).await?.memory_overrides;
        change(&mut o);
        self.set_overrides(id, o).await
    }

    /// Deletes a conversation with its messages, summaries and entities (one transaction). Its turn
    /// stops at once; the rest is behind split point `edits`.
    pub async fn delete(&self, id: &str) -> Result<(), LibraryError> {
        self.chat.stop(id);
        delete_split(self, id).await
    }

    async fn delete_now(&self, id: &str) -> Result<(), LibraryError> {
        self.core.store.delete_conversation(id).await?;
        self.chat.drop_draft(id).await.ok();
        self.core.store.set_memory_failure(id, None).await.ok();
        self.core.forget_branch(id).await;
        self.core.emit(Change::ConversationRemoved(id.to_string()));
        Ok(())
    }

    /// Clears a conversation's messages and memory, keeping the conversation itself. Its turn stops
    /// at once; the rest is behind split point `edits`.
    pub async fn clear(&self, id: &str) -> Result<(), LibraryError> {
        self.chat.stop(id);
        clear_split(self, id).await
    }

    async fn clear_now(&self, id: &str) -> Result<(), LibraryError> {
        let c = self.core.store.clear_conversation(id, now()).await?;
        self.core.forget_branch(id).await;
        self.core.emit(Change::MessagesCleared(id.to_string()));
        self.core.emit(Change::Conversation(c));
        self.core.emit(Change::MemoryChanged(id.to_string()));
        Ok(())
    }

    /// A page of messages: the last `k` (`before` = None) or the `k` before a seq. With `focus` (a
    /// message that is not among the last `k`), the `k` messages around that message instead.
    pub async fn load_page(
        &self,
        id: &str,
        before: Option<u64>,
        k: usize,
        focus: Option<&str>,
    ) -> Result<Page, LibraryError> {
        if let Some(shown) = self.core.shown(id).await? {
            let ask = PageAsk {
                before,
                after: None,
                k,
                focus,
            };
            return Ok(page_of_branch(&shown.messages, &shown.alternatives, ask));
        }
        let read = match before {
            None => self.core.store.load_last(id, k + 1).await?,
            Some(seq) => self.core.store.load_before(id, seq, k + 1).await?,
        };
        let page = page::page_before(read, before, k);
        let Some(target) = page::focus_outside(&page, focus) else {
            return Ok(page);
        };
        match self.core.store.get_message(target).await? {
            Some(m) if m.conversation_id == id => {
                let half = page::half_around(k);
                let older = self.core.store.load_before(id, m.seq + 1, half + 1).await?;
                let newer = self.core.store.load_after(id, m.seq, half + 1).await?;
                Ok(page::page_around(older, newer, half))
            }
            _ => Ok(page),
        }
    }

    /// The `k` messages after seq `after` (the page below what is shown).
    pub async fn load_page_after(
        &self,
        id: &str,
        after: u64,
        k: usize,
    ) -> Result<Page, LibraryError> {
        if let Some(shown) = self.core.shown(id).await? {
            let ask = PageAsk {
                after: Some(after),
                k,
                ..Default::default()
            };
            return Ok(page_of_branch(&shown.messages, &shown.alternatives, ask));
        }
        let read = self.core.store.load_after(id, after, k + 1).await?;
        Ok(page::page_after(read, k))
    }

    /// Conversations whose title matches and messages whose text matches, from the store's term
    /// indexes (behind split point `search_results`, with the results' view: the first search
    /// fetches its chunk; one that cannot be fetched is [`LibraryError::Unavailable`]).
    pub async fn search(&self, query: &str) -> Result<SearchResults, LibraryError> {
        search_split(self, query).await
    }

    async fn search_now(&self, query: &str) -> Result<SearchResults, LibraryError> {
        let titles = self.core.store.search_titles(query, SEARCH_LIMIT).await?;
        let hits = self
            .core
            .store
            .search_messages(query, SEARCH_LIMIT)
            .await?
            .into_iter()
            .map(|h| SearchHit {
                conversation_id: h.conversation_id,
                title: h.title,
                message_id: h.message_id,
                role: h.role,
                snippet: h.snippet,
            })
            .collect();
        Ok(SearchResults { titles, hits })
    }
}

/// Split point `edits`: deleting a conversation (and what only that reaches in the store).
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(edits, fallible, return_wrapper(let future = _; { future.await } -> Result<(), LibraryError>)))]
fn delete_split<'a>(library: &'a Library, id: &'a str) -> Boxed<'a, (), LibraryError> {
    Box::pin(library.delete_now(id))
}

/// Split point `edits`: clearing a conversation.
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(edits, fallible, return_wrapper(let future = _; { future.await } -> Result<(), LibraryError>)))]
fn clear_split<'a>(library: &'a Library, id: &'a str) -> Boxed<'a, (), LibraryError> {
    Box::pin(library.clear_now(id))
}

/// Split point `search_results` (the ui's results view is in the same chunk): reading the term
/// indexes and making the snippets.
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(search_results, fallible, return_wrapper(let future = _; { future.await } -> Result<SearchResults, LibraryError>)))]
fn search_split<'a>(
    library: &'a Library,
    query: &'a str,
) -> Boxed<'a, SearchResults, LibraryError> {
    Box::pin(library.search_now(query))
}
