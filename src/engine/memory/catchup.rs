//! Catching memory up with a history it does not cover yet: an imported conversation, or one whose
//! updates fell behind. The uncovered history is cut, oldest first, into the chunks live updates
//! would have made: every M user/assistant pairs ([`chunk_end`]), each within the update's size limits
//! (the same selection as a live update, `prompt::select_span`). Each chunk is the
//! [`UpdateRequest`] a live update sends, and the summary it writes covers up to its last seq, so the
//! stored summary is the run's only bookmark: a cancelled or failed run resumes where it stopped and
//! never redoes a chunk. Also which conversations need it ([`needs_catch_up`]) and the plan a run
//! shows progress by ([`plan`]). Must not import anything outside `crate::engine`.

use super::due::counts_for_memory;
use super::parse::ParsedUpdate;
use super::prompt::{build_update_request, select_span, UpdateLimits, UpdateRequest};
use super::MemoryError;
use crate::engine::import::Source;
use crate::engine::model::{ConversationSummary, EntityNode, Message, Role};
use std::borrow::Cow;

/// One chunk of a catch-up: the seqs its update covers and how many messages it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk {
    pub from_seq: u64,
    pub to_seq: u64,
    pub messages: usize,
}

/// The chunks that remain, oldest first (empty: memory covers the whole history).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    pub chunks: Vec<Chunk>,
}

/// The messages sorted by seq (borrowed when they already are, as the store reads them).
fn by_seq(messages: &[Message]) -> Cow<'_, [Message]> {
    if messages.windows(2).all(|w| w[0].seq <= w[1].seq) {
        Cow::Borrowed(messages)
    } else {
        let mut v = messages.to_vec();
        crate::engine::sort::sort_by_key(&mut v, |m| m.seq);
        Cow::Owned(v)
    }
}

/// The last seq of the next chunk after `after`, counted as live updates count: the assistant reply
/// that closes the `every_pairs`-th user/assistant pair (0 is treated as 1) among the messages that
/// count for memory; `u64::MAX` (everything left) when fewer pairs remain. `messages` sorted by seq.
pub fn chunk_end(messages: &[Message], after: Option<u64>, every_pairs: usize) -> u64 {
    let every = every_pairs.max(1);
    let mut pairs = 0;
    let mut open_user = false;
    let counting = messages
        .iter()
        .filter(|m| after.is_none_or(|s| m.seq > s) && counts_for_memory(m));
    for m in counting {
        match m.role {
            Role::User => open_user = true,
            Role::Assistant if open_user => {
                open_user = false;
                pairs += 1;
                if pairs == every {
                    return m.seq;
                }
            }
            _ => {}
        }
    }
    u64::MAX
}

/// The messages of the next chunk after `after`: a prefix of `sorted` (by seq).
fn chunk_of(sorted: &[Message], after: Option<u64>, every_pairs: usize) -> &[Message] {
    let end = chunk_end(sorted, after, every_pairs);
    let n = sorted.partition_point(|m| m.seq <= end);
    &sorted[..n]
}

/// Every chunk left after `covers` (the latest summary's `covers_up_to_seq`; `None`: no summary),
/// each exactly the span [`next_request`] gives at that point.
pub fn plan(
    messages: &[Message],
    covers: Option<u64>,
    limits: &UpdateLimits,
    every_pairs: usize,
) -> Plan {
    let sorted = by_seq(messages);
    let mut after = covers;
    let mut chunks = Vec::new();
    while let Some((_, span, _)) = select_span(chunk_of(&sorted, after, every_pairs), after, limits)
    {
        chunks.push(Chunk {
            from_seq: span.from_seq,
            to_seq: span.to_seq,
            messages: span.message_ids.len(),
        });
        after = Some(span.to_seq);
    }
    Plan { chunks }
}

/// The update of the next chunk after `previous`: the request a live update would send for it
/// (`build_update_request` over the chunk's messages). [`MemoryError::NothingToSummarize`] when
/// memory covers the whole history.
pub fn next_request(
    previous: Option<&ConversationSummary>,
    messages: &[Message],
    entities: &[EntityNode],
    limits: &UpdateLimits,
    every_pairs: usize,
) -> Result<UpdateRequest, MemoryError> {
    let sorted = by_seq(messages);
    let after = previous.map(|s| s.covers_up_to_seq);
    build_update_request(
        previous,
        chunk_of(&sorted, after, every_pairs),
        entities,
        limits,
    )
}

/// A chunk always moves the summary's coverage on: a reply that parsed without a summary (entities
/// only, and no user statement to add) gets an empty one, which carries the previous summary forward
/// (`summary::carry_forward`) over this chunk. Without it the next chunk would be this one again.
pub fn settle(parsed: &mut ParsedUpdate) {
    parsed.summary.get_or_insert_with(String::new);
}

/// The message count the summary written after a chunk ending at `to_seq` records: the messages
/// up to it, or `total` (the conversation's count) when nothing after it is left to summarise.
pub fn covered_count(messages: &[Message], to_seq: u64, limits: &UpdateLimits, total: u64) -> u64 {
    if select_span(messages, Some(to_seq), limits).is_none() {
        return total;
    }
    messages.iter().filter(|m| m.seq <= to_seq).count() as u64
}

/// Whether a conversation id is one an import gave (`<source>-<source id>`, see
/// `import::conversation_id`).
pub fn is_imported(conversation_id: &str) -> bool {
    Source::ALL.iter().any(|s| {
        conversation_id
            .strip_prefix(s.key())
            .is_some_and(|rest| rest.starts_with('-'))
    })
}

/// What [`needs_catch_up`] looks at: counts the memory pane already holds, no messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backlog {
    /// Messages in the conversation.
    pub message_count: u64,
    /// Messages the latest summary counted (`ConversationSummary::message_count`); 0 without one.
    pub summarised: u64,
    /// Imported ([`is_imported`]): its history never went through live updates.
    pub imported: bool,
    /// N, the recent messages every prompt carries word for word.
    pub recent_messages: usize,
}

/// Whether to offer building memory from a conversation's history: something is left that no
/// summary counted, and it is an imported history, or more than the live window (the N recent
/// messages) that live updates have not caught up with.
pub fn needs_catch_up(b: Backlog) -> bool {
    let uncovered = b.message_count.saturating_sub(b.summarised);
    uncovered > 0 && (b.imported || uncovered > b.recent_messages as u64)
}
