//! When the memory update (summary + entities) runs: after every M user/assistant pairs since the
//! summary's `covers_up_to_seq`, or when the caller says the history no longer fits the budget.
//! "Never twice at once" is the session's (a Web Lock per conversation, and its own record of the
//! updates running in the tab): only it knows what runs. After a failure, automatic updates back off
//! ([`retry_allowed`]): exponentially in turns or time passed. Must not import anything outside
//! `crate::engine`.

use super::error::MemoryFailure;
use crate::engine::model::{Message, MessageStatus, Millis, Role};
use crate::engine::sort::sort_by_key;

/// Whether a message takes part in memory: not errored, not still streaming, not empty, and not
/// hidden from the model (`MessageMeta::hidden`). Interrupted replies count (their partial text is
/// kept and was seen by the user).
pub fn counts_for_memory(m: &Message) -> bool {
    !matches!(m.status, MessageStatus::Error | MessageStatus::Streaming)
        && !m.content.trim().is_empty()
        && !m.meta.hidden
}

/// Everything `due` looks at.
#[derive(Debug, Clone, Copy)]
pub struct DueInput<'a> {
    /// The conversation's messages (any order; only `seq` matters).
    pub messages: &'a [Message],
    /// `covers_up_to_seq` of the latest summary, or `None` when there is no summary yet.
    pub covers_up_to_seq: Option<u64>,
    /// M: user/assistant pairs between updates (0 is treated as 1).
    pub every_pairs: usize,
    /// True when the assembler reported that the history no longer fits the budget.
    pub over_budget: bool,
}

/// Why an update is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DueReason {
    /// `pairs` complete user/assistant pairs accumulated since the summary (>= M).
    Pairs { pairs: usize },
    /// The history does not fit the budget any more and there is something to summarise.
    OverBudget { pairs: usize },
}

/// The decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Due {
    /// Nothing to do; `pairs` counted so far.
    No {
        pairs: usize,
    },
    Yes(DueReason),
}

impl Due {
    pub fn is_due(self) -> bool {
        matches!(self, Due::Yes(_))
    }
}

/// The seq of the first reply still streaming after `after_seq`, if any. Memory never covers it or
/// anything after it: with several tabs, a later message can be complete while an earlier reply (from
/// another tab) is still being written, and an update covering past it would never summarise it.
pub fn first_unsettled(messages: &[Message], after_seq: Option<u64>) -> Option<u64> {
    messages
        .iter()
        .filter(|m| after_seq.is_none_or(|s| m.seq > s) && m.status == MessageStatus::Streaming)
        .map(|m| m.seq)
        .min()
}

/// Counts complete user -> assistant pairs among the counting messages after `after_seq` (and before
/// the first reply still streaming, see [`first_unsettled`]):
/// an assistant message closes a pair when a user message came before it since the last pair.
/// Errored, streaming and empty messages are skipped, so they neither open nor close a pair.
pub fn count_pairs(messages: &[Message], after_seq: Option<u64>) -> usize {
    let until = first_unsettled(messages, after_seq).unwrap_or(u64::MAX);
    let mut eligible: Vec<&Message> = messages
        .iter()
        .filter(|m| after_seq.is_none_or(|s| m.seq > s) && m.seq < until && counts_for_memory(m))
        .collect();
    if !eligible.windows(2).all(|w| w[0].seq <= w[1].seq) {
        sort_by_key(&mut eligible, |m| m.seq);
    }
    let mut pairs = 0;
    let mut open_user = false;
    for m in eligible {
        match m.role {
            Role::User => open_user = true,
            Role::Assistant if open_user => {
                pairs += 1;
                open_user = false;
            }
            _ => {}
        }
    }
    pairs
}

/// Whether the memory update should run now.
pub fn due(input: DueInput<'_>) -> Due {
    let pairs = count_pairs(input.messages, input.covers_up_to_seq);
    let every = input.every_pairs.max(1);
    if pairs >= every {
        return Due::Yes(DueReason::Pairs { pairs });
    }
    if input.over_budget {
        let until = first_unsettled(input.messages, input.covers_up_to_seq).unwrap_or(u64::MAX);
        let anything_new = input.messages.iter().any(|m| {
            input.covers_up_to_seq.is_none_or(|s| m.seq > s)
                && m.seq < until
                && counts_for_memory(m)
                && matches!(m.role, Role::User | Role::Assistant)
        });
        if anything_new {
            return Due::Yes(DueReason::OverBudget { pairs });
        }
    }
    Due::No { pairs }
}

/// Most turns an automatic update waits after failures in a row.
pub const MAX_RETRY_TURNS: usize = 32;
/// Time after the first failure after which the next turn may try again; doubles with each failure.
pub const FIRST_RETRY_MS: Millis = 5 * 60 * 1000;
/// Longest time an automatic update waits.
pub const MAX_RETRY_MS: Millis = 6 * 60 * 60 * 1000;

/// How long automatic updates wait after `attempts` failures in a row: (turns, milliseconds).
/// After the first failure 2 turns or 5 minutes, then 4 turns or 10 minutes, and so on, up to
/// [`MAX_RETRY_TURNS`] turns or [`MAX_RETRY_MS`].
pub fn retry_wait(attempts: u32) -> (usize, Millis) {
    let doublings = attempts.clamp(1, 16) - 1;
    let turns = (2usize << doublings).min(MAX_RETRY_TURNS);
    let ms = FIRST_RETRY_MS
        .saturating_mul(1 << doublings)
        .min(MAX_RETRY_MS);
    (turns, ms)
}

/// Whether an automatic memory update may run after the conversation's last one failed
/// (`failure`): at once when something changed (another memory endpoint or model), else once
/// enough user turns (counted in `messages` after the failed update's messages) or enough time
/// (`now`) has passed, per [`retry_wait`]. The user's "Retry" never waits: it does not ask.
pub fn retry_allowed(
    failure: Option<&MemoryFailure>,
    messages: &[Message],
    endpoint_key: &str,
    now: Millis,
) -> bool {
    let Some(f) = failure else {
        return true;
    };
    if f.endpoint_key != endpoint_key {
        return true;
    }
    let (turns, ms) = retry_wait(f.attempts);
    let turns_since = messages
        .iter()
        .filter(|m| m.seq > f.seq && m.role == Role::User && counts_for_memory(m))
        .count();
    turns_since >= turns || now.saturating_sub(f.at) >= ms
}
