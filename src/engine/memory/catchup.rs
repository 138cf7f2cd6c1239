//! Catching memory up with a history it does not cover yet: an imported conversation, or one whose
//! updates fell behind. The uncovered history is cut, oldest first, into the chunks live updates
//! would have made: every M user/assistant pairs ([`chunk_end`]), each within the update's size limits
//! (the same selection as a live update, `prompt::select_span`). Each chunk is the
//! [`UpdateRequest`] a live update sends, and the summary it writes covers up to its last seq, so the
//! stored summary is the run's only bookmark: a cancelled or failed run resumes where it stopped and
//! never redoes a chunk. Also which conversations need it ([`needs_catch_up`]) and the plan a run
//! shows progress by ([`plan`]). Must not import anything outside `crate::engine`.

use super::due::counts_for_memory;
use super::error::MemoryError;
use super::parse::ParsedUpdate;
use super::prompt::{build_update_request, select_span, UpdateLimits, UpdateRequest};
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

/// An update that parsed always moves the summary's coverage on, a catch-up's chunk or a live
/// update: a reply left without a summary (its sentences echoed the instructions or said what no
/// message says, and the span held no user statement to add: `read::ground` adds every one, so
/// nothing the user said is lost) gets an empty one, which carries the previous summary forward
/// (`summary::carry_forward`) over the span. Without it the next update would be this one again,
/// and a small model that fumbles one span (measured: SmolLM2-135M echoing the instructions for a
/// span holding one long reply of its own, eight times in a row) would hold memory there for good.
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

/// A build gives up after this many conversations in a row failed for the same reason (an
/// endpoint that is down or refuses the key would fail every one, each after its own time-out).
pub const GIVE_UP_AFTER: usize = 3;

/// One conversation whose memory a build could not finish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildFailure {
    pub conversation_id: String,
    pub title: String,
    /// What went wrong, in the user's words (the memory error's message).
    pub reason: String,
}

/// How a memory build over several conversations goes: it goes on past a conversation that fails,
/// gives up when the same failure comes [`GIVE_UP_AFTER`] times in a row, and says at the end, in
/// plain words, what was built, which failed and why, and what a retry would build.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BuildTally {
    built: usize,
    updates: usize,
    failed: Vec<BuildFailure>,
    same_in_a_row: usize,
}

impl BuildTally {
    /// A conversation's memory now covers its history; `updates` were written for it.
    pub fn built(&mut self, updates: usize) {
        self.built += 1;
        self.updates += updates;
        self.same_in_a_row = 0;
    }

    /// A conversation failed (what it had built before the failure stays).
    pub fn failed(&mut self, f: BuildFailure) {
        let same = self.failed.last().is_some_and(|l| l.reason == f.reason);
        self.same_in_a_row = if same { self.same_in_a_row + 1 } else { 1 };
        self.failed.push(f);
    }

    /// The same failure came [`GIVE_UP_AFTER`] times in a row: the rest would fail too.
    pub fn gives_up(&self) -> bool {
        self.same_in_a_row >= GIVE_UP_AFTER
    }

    pub fn failures(&self) -> &[BuildFailure] {
        &self.failed
    }

    /// What a retry builds: the conversations that failed, then those never reached.
    pub fn retry(&self, not_reached: &[String]) -> Vec<String> {
        self.failed
            .iter()
            .map(|f| f.conversation_id.clone())
            .chain(not_reached.iter().cloned())
            .collect()
    }

    /// The end of the run, for the progress line: `not_reached` are the conversations left
    /// waiting when it gave up.
    pub fn report(&self, not_reached: usize) -> String {
        use crate::engine::format::{clip, plural};
        let done = format!(
            "{} up to date, {} written",
            plural(self.built, "conversation", "conversations"),
            plural(self.updates, "update", "updates")
        );
        if self.failed.is_empty() && not_reached == 0 {
            return format!("Memory built: {done}.");
        }
        // The failures grouped by reason, in the order they came; a few titles each.
        let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
        for f in &self.failed {
            match groups.iter_mut().find(|(r, _)| *r == f.reason) {
                Some((_, titles)) => titles.push(&f.title),
                None => groups.push((&f.reason, vec![&f.title])),
            }
        }
        let mut out = String::new();
        if self.gives_up() {
            out.push_str(&format!(
                "Memory building stopped: the same failure came {GIVE_UP_AFTER} times in a row. "
            ));
        }
        out.push_str(&format!("Memory built: {done}. "));
        for (reason, titles) in &groups {
            let shown: Vec<String> = titles
                .iter()
                .take(3)
                .map(|t| format!("“{}”", clip(t, 40)))
                .collect();
            let more = match titles.len().saturating_sub(3) {
                0 => String::new(),
                n => format!(" and {n} more"),
            };
            out.push_str(&format!(
                "Not built ({}): {}{more}. ",
                clip(reason.trim_end_matches('.'), 200),
                shown.join(", ")
            ));
        }
        if not_reached > 0 {
            out.push_str(&format!(
                "Not reached: {}. ",
                plural(not_reached, "conversation", "conversations")
            ));
        }
        out.push_str("What was built is kept; Retry builds only the rest.");
        out
    }
}
