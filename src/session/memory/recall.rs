//! Recall of past conversations for a prompt: when the new message refers back to something said
//! before, the search index is read for its words and the engine chooses the passages
//! (`engine::memory::recall`). The caller asks only when memory about the user is on (the same
//! switches); a conversation with it off is never a source. Reads only; in the main wasm, as a
//! prompt needs it before it goes out. Must not import `ui`.

use super::service::Memory;
use crate::engine::memory::recall::{lookup_words, rank, refers_back, Found, Passage};
use crate::session::shared::error::ReadError;

/// Most records read per looked-up word.
const LOOKUP_LIMIT: usize = 200;

impl Memory {
    /// The passages of other conversations than `here` that `text` (the new message) refers back
    /// to, best first; none when it refers to nothing said before.
    pub(crate) async fn recall_for(
        &self,
        here: &str,
        text: &str,
    ) -> Result<Vec<Passage>, ReadError> {
        if !refers_back(text) {
            return Ok(Vec::new());
        }
        let words = lookup_words(text);
        let found = self
            .core
            .store
            .messages_under(&words, LOOKUP_LIMIT)
            .await?
            .into_iter()
            .map(|(message, c)| Found {
                message,
                title: c.title,
                private: c.memory_overrides.user_memory == Some(false),
            })
            .collect();
        Ok(rank(found, &words, here))
    }
}
