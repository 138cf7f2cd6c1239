//! What can go wrong in the memory protocol ([`MemoryError`]: on any of these nothing changes) and
//! the record of the last update that failed ([`MemoryFailure`], shown in the memory pane until one
//! succeeds). A leaf of `engine::memory` but for the output form it records (`super::form`) and
//! truncation (`super::normalize`), so every memory module can use it.
//! Must not import anything outside `crate::engine`.

use super::form::MemoryForm;
use super::normalize;
use crate::engine::model::Millis;

/// Everything that can go wrong in the memory protocol. On any of these, nothing is changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MemoryError {
    #[error("there are no new messages to add to the memory")]
    NothingToSummarize,
    #[error("the memory reply was empty; the previous memory is kept")]
    EmptyReply,
    #[error("the memory reply was too large ({bytes} bytes, limit {limit}); the previous memory is kept")]
    ReplyTooLarge { bytes: usize, limit: usize },
    #[error("the memory reply had neither a summary nor entities; the previous memory is kept")]
    NoMemory,
    #[error("the entity section of the memory reply is not valid JSON ({detail}); the previous memory is kept")]
    BadEntityJson { detail: String },
    #[error("that summary belongs to another conversation")]
    RestoreOtherConversation,
    #[error("Summary version {version} does not exist.")]
    RestoreMissing { version: u32 },
    #[error("only an older summary can be restored (version {older} is not older than {latest})")]
    RestoreNotOlder { older: u32, latest: u32 },
}

/// The last memory update of a conversation that failed, for the memory pane: when, why, what came
/// back, and how it was asked for. Cleared by the next update that succeeds.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryFailure {
    pub at: Millis,
    /// A sentence the user can act on.
    pub reason: String,
    /// The reply as received, cut at [`MAX_RAW_REPLY_CHARS`]; empty when nothing came back.
    pub raw_reply: String,
    /// The form of the last request the update sent.
    pub form: MemoryForm,
    /// Updates that failed in a row, this one included (the back-off grows with it, see
    /// `due::retry_allowed`).
    pub attempts: u32,
    /// The highest seq of the messages the failed update looked at.
    pub seq: u64,
    /// The memory endpoint it was sent to (`EndpointProfile::key`): another one is a change.
    pub endpoint_key: String,
}

/// How much of a failed reply is kept for the memory pane.
pub const MAX_RAW_REPLY_CHARS: usize = 20_000;

impl MemoryFailure {
    /// A failure at `at`, keeping at most [`MAX_RAW_REPLY_CHARS`] of the reply.
    pub fn new(at: Millis, reason: String, raw_reply: &str, form: MemoryForm) -> MemoryFailure {
        MemoryFailure {
            at,
            reason,
            raw_reply: normalize::truncate_chars(raw_reply, MAX_RAW_REPLY_CHARS).to_string(),
            form,
            attempts: 1,
            seq: 0,
            endpoint_key: String::new(),
        }
    }

    /// This failure, of an update that looked at messages up to `seq` and went to `endpoint_key`,
    /// following `previous`: one more in a row when nothing changed, else the first.
    pub fn following(
        mut self,
        previous: Option<&MemoryFailure>,
        seq: u64,
        endpoint_key: &str,
    ) -> MemoryFailure {
        self.seq = seq;
        self.endpoint_key = endpoint_key.to_string();
        self.attempts = match previous {
            Some(p) if p.endpoint_key == endpoint_key => p.attempts.saturating_add(1),
            _ => 1,
        };
        self
    }

    /// Whether this failure says the same as `previous` (then the memory pane, which already shows
    /// it, is enough: no new banner): the same reason from the same endpoint.
    pub fn repeats(&self, previous: Option<&MemoryFailure>) -> bool {
        previous.is_some_and(|p| p.reason == self.reason && p.endpoint_key == self.endpoint_key)
    }
}
