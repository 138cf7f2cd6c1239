//! A conversation's title written by the model after its first reply. Whether one is asked, what
//! is asked and what of the reply is kept are the engine's (`engine::title`); this file sends the
//! small request and stores the title. The request goes where memory updates go (the memory model
//! where one is set, else the chat model; the memory endpoint's URL and key, with the same
//! credential rules) through the same transport, once the chat turn is over (the turn driver asks
//! for it after the turn, as for the memory update). A failed or unusable reply changes nothing:
//! the title stays the first message. Must not import `ui`.

use super::service::{Memory, MemoryError};
use super::update::complete;
use crate::engine::model::{Message, MessageStatus, Role};
use crate::engine::slots::Purpose;
use crate::engine::title::{title_of_reply, title_request, wants_model_title};
use crate::store::ConversationPatch;

/// The first exchange is among this many messages on the branch (retries and edits included).
const FIRST_EXCHANGE_WINDOW: usize = 12;

impl Memory {
    /// Asks the model for a title when the conversation's first reply just ended and its title is
    /// still its first message; a failure is quiet (the first-message title stays).
    pub(crate) async fn title_if_due(&self, id: &str) {
        let _ = self.write_title(id).await;
    }

    /// Returns whether a model-written title was stored.
    async fn write_title(&self, id: &str) -> Result<bool, MemoryError> {
        let conv = self.core.conversation(id).await?;
        if conv.message_count as usize > FIRST_EXCHANGE_WINDOW
            || !self.core.settings.borrow().has_endpoint()
        {
            return Ok(false);
        }
        let messages = self.core.branch_tail(id, FIRST_EXCHANGE_WINDOW).await?;
        let Some((first, reply, replies)) = first_exchange(&messages) else {
            return Ok(false);
        };
        if !wants_model_title(&conv, &first, replies, false) {
            return Ok(false);
        }
        let endpoint = self
            .core
            .settings
            .borrow()
            .memory_endpoint_for(&conv.memory_overrides);
        let (prompt, mut options) = title_request(&first, &reply);
        options.slot = self.core.slot_use(&endpoint, Purpose::Title);
        let answer = complete(&endpoint, &prompt, &options).await;
        let Some(title) = answer.and_then(|(text, cut)| title_of_reply(&text, cut, &first, &reply))
        else {
            return Ok(false);
        };
        // The user may have renamed it while the model wrote: their title stays.
        let now = self.core.conversation(id).await?;
        if !wants_model_title(&now, &first, replies, false) {
            return Ok(false);
        }
        let patch = ConversationPatch {
            title: Some((title, false)),
            ..Default::default()
        };
        self.core.patch_conversation(id, &patch).await?;
        Ok(true)
    }
}

/// The branch's first user message, its first complete reply, and how many complete replies the
/// branch holds; `None` when the window does not start at the conversation's first message.
fn first_exchange(messages: &[Message]) -> Option<(String, String, usize)> {
    let first = messages.iter().find(|m| m.role == Role::User)?;
    let complete: Vec<&Message> = messages
        .iter()
        .filter(|m| m.role == Role::Assistant && m.status == MessageStatus::Complete)
        .collect();
    let reply = complete.first()?;
    Some((first.content.clone(), reply.content.clone(), complete.len()))
}
