//! Whether the composer's message may go now, and the one wording of each refusal: offline, no
//! agent endpoint, an attachment still being prepared. `ui/flow.rs` asks [`may_send`] with what
//! it sees; the session's own endpoint check ([`NO_ENDPOINT`]) says the same words. A refused
//! message stays in the composer. Also what Send and Enter do with the draft ([`on_submit`]), when
//! an edited message may go again ([`may_resend`]), where Retry, Continue and a message's other
//! actions are offered ([`retry_offered`], [`continue_offered`], [`actions_offered`]), and what
//! the banner says when the network comes and goes. Must not import anything outside
//! `crate::engine`.

use crate::engine::model::{MessageStatus, Role};

/// What the session says when a request needs an endpoint and none is set.
pub const NO_ENDPOINT: &str =
    "No agent endpoint is set. Open Settings, pick a preset or enter your agent's URL, and save.";

/// Why the composer's message does not go now. Each says what to do; the message is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SendRefusal {
    #[error(
        "You are offline. Your message is kept in the composer; send it when you are back online."
    )]
    Offline,
    #[error("{NO_ENDPOINT} Your message is kept.")]
    NoEndpoint,
    #[error("An attachment is still being prepared; send again in a moment.")]
    StillAttaching,
}

/// What the composer sees when Send is pressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendState {
    /// The browser says it is online.
    pub online: bool,
    /// Settings name an agent endpoint.
    pub has_endpoint: bool,
    /// An attachment is still being read or resized.
    pub attaching: bool,
}

/// Whether the message may go: the first refusal that applies, in the order the user can fix them
/// (being offline first: nothing else can be checked meaningfully without the network).
pub fn may_send(state: SendState) -> Result<(), SendRefusal> {
    if !state.online {
        Err(SendRefusal::Offline)
    } else if !state.has_endpoint {
        Err(SendRefusal::NoEndpoint)
    } else if state.attaching {
        Err(SendRefusal::StillAttaching)
    } else {
        Ok(())
    }
}

/// What Send and Enter do with the composer's draft.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Submit {
    /// Nothing: the draft is blank (no text, no attachment) or a reply is being written.
    Nothing,
    /// `/clear`: the composer asks before the conversation is cleared; nothing is sent.
    AskToClear,
    /// The draft goes (if [`may_send`] lets it).
    Send,
}

/// What Send and Enter do with `draft` (and `attachments` attached) while a reply is or is not
/// being written (`streaming`).
pub fn on_submit(draft: &str, attachments: bool, streaming: bool) -> Submit {
    if streaming || (draft.trim().is_empty() && !attachments) {
        Submit::Nothing
    } else if draft.trim() == "/clear" {
        Submit::AskToClear
    } else {
        Submit::Send
    }
}

/// Whether an edited user message's new `text` goes (Save, Enter): not blank, and no reply being
/// written.
pub fn may_resend(text: &str, streaming: bool) -> bool {
    !text.trim().is_empty() && !streaming
}

/// Whether Retry sits on the last message (its `role` and `status`; `None`: no message): a user's,
/// or a reply that failed or was cut off, while no turn runs.
pub fn retry_offered(last: Option<(Role, MessageStatus)>, streaming: bool) -> bool {
    !streaming
        && last.is_some_and(|(role, status)| {
            role == Role::User
                || matches!(status, MessageStatus::Error | MessageStatus::Interrupted)
        })
}

/// Whether Continue is offered on a reply the reply cap cut (`capped`): not while a reply is being
/// written, nor in a temporary chat (its messages are not stored).
pub fn continue_offered(capped: bool, streaming: bool, temporary: bool) -> bool {
    capped && !streaming && !temporary
}

/// Whether a message's Edit, Regenerate and Delete are offered: not while a reply is being written
/// (`streaming`) or the message itself streams (`status`), nor in a temporary chat (its messages are
/// not stored: no branch to make).
pub fn actions_offered(streaming: bool, status: MessageStatus, temporary: bool) -> bool {
    !streaming && status != MessageStatus::Streaming && !temporary
}

/// The notice when the browser comes back online.
pub const BACK_ONLINE: &str = "You are back online.";

/// The notice when the browser goes offline: what still works.
pub const WENT_OFFLINE: &str = "You are offline. Everything stored can still be read and searched.";

/// Whether the banner's error `text` ends when the browser is back online: the offline refusal
/// does; other errors stay, with their actions.
pub fn ends_when_online(text: &str) -> bool {
    text == SendRefusal::Offline.to_string()
}
