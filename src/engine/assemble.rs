//! Context assembly: builds the prompt for a turn under a token budget and a byte cap, in
//! ARCHITECTURE.md's order (system, the facts about the user, passages of other conversations,
//! summary, relevant entities, history, new message), and reports what it included, what it dropped and why, so the context inspector
//! can show it.
//!
//! Priorities when space is short, highest first:
//! 1. the system prompt and the new message: never dropped (if they alone exceed the budget the
//!    assembly says so with `over_budget`; it is a result, not an error);
//! 2. room held for what the user said in the messages the summary does not cover yet, in case
//!    history cannot carry them ([`PENDING_SHARE_PERCENT`]), then the most recent of those messages
//!    (up to the last N);
//! 3. the summary (its sentences that an uncovered user message, or a fact about the user said
//!    elsewhere since the summary was made, supersedes carried as past, `memory::pending`), then
//!    the facts about the user (`memory::user`: the core, then those the recent messages speak of)
//!    within their share ([`USER_FACTS_SHARE_PERCENT`]), none that an uncovered user message
//!    supersedes; when space is short they give way before the summary;
//!    then the passages of other conversations the new message refers back to (`memory::recall`),
//!    as many as fit their share ([`RECALL_SHARE_PERCENT`]);
//! 4. the rest of the last N (covered by the summary, kept verbatim for recency);
//! 5. the entities, within their share of the budget ([`ENTITY_SHARE_PERCENT`]), without an alias
//!    or property naming what a fact said elsewhere since the summary was made ends;
//! 6. older messages the summary does not cover, newest first;
//! 7. the user's statements from the uncovered messages history left out (`memory::pending`: a
//!    fact the user gave stays in the prompt until a memory update covers it), in the room held for
//!    them and whatever is left;
//! 8. the facts about the user that did not fit their share (in `memory::user`'s order), then the
//!    entities that did not fit theirs, in what history left unused (a memory is worth more than
//!    empty room).
//!
//! A reply's tool calls count with their results (`history::render_message` carries them); a
//! reply whose results do not fit what is left gets them shortened (halved, each down to
//! `tools::MIN_SHORTENED`) before it is left out, so the newer replies, taken first, keep theirs
//! whole and older results are shortened first.
//!
//! Older messages the summary covers are dropped first (`CoveredBySummary`); errored and empty
//! messages are skipped. History stays contiguous: once a message does not fit, every older one is
//! dropped too, and `history_overflow` says a memory update is due. The walk goes backwards and stops
//! estimating at the first message that does not fit, so a 10,000-message conversation costs a
//! classification pass over the rest, not an estimation of it. Deterministic: same input, same output.
//!
//! Byte sizes are an upper estimate of the JSON request body (escapes counted, per-message and
//! per-request overheads added). Must not import anything outside `crate::engine`.

use crate::engine::attach;
use crate::engine::format::{one_line, plural};
use crate::engine::history::{
    build_prompt_with, carried_calls, ended_marker, render_message, render_new, truncate_chars,
    TRANSCRIPT_OPEN,
};
use crate::engine::memory::ground::support_terms;
use crate::engine::memory::recall::{
    passage_line, passages_detail, Passage, RECALL_HEADING, RECALL_SHARE_PERCENT,
};
use crate::engine::memory::summary::shorten;
use crate::engine::memory::supersede::forget_gone;
use crate::engine::memory::user::{
    fact_line, pick_for_prompt, said_after, Picked, USER_FACTS_HEADING,
};
use crate::engine::memory::{memory_pending, Pending};
use crate::engine::model::{
    ConversationSummary, EntityNode, HistoryFormat, MemoryConfig, Message, MessageStatus, Millis,
    Prompt, Protocol, Role, UserFact, WireMessage,
};
use crate::engine::sort::sort_by_key;
use crate::engine::tokens::TokenEstimator;
use crate::engine::tools::{model_text, MIN_SHORTENED};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Share of the budget the entity section may use, in percent.
pub const ENTITY_SHARE_PERCENT: u32 = 15;
/// Consecutive entities that did not fit before the rest are left out unrendered.
pub const ENTITY_MAX_MISSES: usize = 4;
/// The shortest cap on one entity line, whatever the share.
const MIN_ENTITY_LINE_CHARS: usize = 80;
/// Below this much share left, no entity line can fit.
const MIN_ENTITY_TOKENS: u32 = 8;
/// Tokens a message costs beyond its text (role markers, separators).
pub const MESSAGE_OVERHEAD_TOKENS: u32 = 5;
/// Bytes a message costs in the request body beyond its escaped text.
pub const MESSAGE_OVERHEAD_BYTES: usize = 48;
/// Bytes of the request body that are not prompt text (model, flags, options).
pub const REQUEST_OVERHEAD_BYTES: usize = 1024;
/// Heading of the summary section inside the system text.
pub const SUMMARY_HEADING: &str = "## Summary of the conversation so far";
/// Share of the budget held for the user's statements from uncovered messages that history may
/// leave out, in percent.
pub const PENDING_SHARE_PERCENT: u32 = 35;
/// The most uncovered user messages whose statements the prompt reads (the newest): a memory that
/// fell further behind (an import never built, memory off) is the catch-up's to cover, and each send
/// reads no more than this whatever the history's length.
pub const MAX_PENDING_MESSAGES: usize = 400;
/// Heading of the section of the user's statements memory does not hold yet.
pub const PENDING_HEADING: &str =
    "## What the user said earlier in this conversation (not yet in the summary)";
/// Share of the budget the facts about the user may use, in percent. 10%: a fact is one short
/// sentence with its day (about 12-15 tokens), so a 4k context (about 3,500 tokens of budget) carries
/// some 25 facts, the core and those the conversation speaks of, and a 2k one about 10; with the
/// entities' 15% the memory about things stays within the quarter of the budget issue 26 allows
/// (`memory_eval_memory_tokens_median`), and the conversation keeps the rest.
pub const USER_FACTS_SHARE_PERCENT: u32 = 10;
/// Heading of the entity section inside the system text.
pub const ENTITIES_HEADING: &str = "## What you remember (entity memory)";

/// Everything assembly needs. `history` is the conversation's messages in ascending seq order; it may
/// or may not contain the new message (a message with the new message's id is ignored).
#[derive(Debug, Clone, Copy)]
pub struct AssemblyInput<'a> {
    pub system_prompt: &'a str,
    pub summary: Option<&'a ConversationSummary>,
    /// Already ranked, most relevant first.
    pub entities: &'a [EntityNode],
    pub history: &'a [Message],
    pub new_message: &'a Message,
    pub config: &'a MemoryConfig,
    pub protocol: Protocol,
    /// The facts about the user (`memory::user`), all of them as stored: the assembly keeps the
    /// current, unforgotten ones about the user and those of [`AssemblyInput::project`], never
    /// another project's (`memory::user::in_scope`), and chooses within
    /// [`USER_FACTS_SHARE_PERCENT`]. `&[]` when memory about the user is off.
    pub user_facts: &'a [UserFact],
    /// The conversation's project (`engine::project::prompt_scope`); `None`: none.
    pub project: Option<&'a str>,
    /// Passages of other conversations the new message refers back to (`memory::recall`), best
    /// first: the assembly carries those that fit [`RECALL_SHARE_PERCENT`]. `&[]` when off.
    pub recall: &'a [Passage],
}

/// The parts of a prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SectionKind {
    System,
    /// The facts about the user, across conversations ("About you").
    UserFacts,
    /// Passages of other conversations the new message refers back to.
    Recall,
    Summary,
    /// The user's statements from messages memory does not cover and history left out.
    Pending,
    Entities,
    History,
    NewMessage,
}

impl SectionKind {
    /// A key for the inspector (`user-facts`).
    pub fn key(self) -> &'static str {
        match self {
            SectionKind::System => "system",
            SectionKind::UserFacts => "user-facts",
            SectionKind::Recall => "recall",
            SectionKind::Summary => "summary",
            SectionKind::Pending => "pending",
            SectionKind::Entities => "entities",
            SectionKind::History => "history",
            SectionKind::NewMessage => "new-message",
        }
    }
    /// The inspector's label ("About you").
    pub fn label(self) -> &'static str {
        match self {
            SectionKind::System => "System prompt",
            SectionKind::UserFacts => "About you",
            SectionKind::Recall => "From other conversations",
            SectionKind::Summary => "Summary",
            SectionKind::Pending => "Said, not yet in memory",
            SectionKind::Entities => "Entities",
            SectionKind::History => "History",
            SectionKind::NewMessage => "New message",
        }
    }
}

/// One included section with its cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Section {
    pub kind: SectionKind,
    pub tokens: u32,
    pub bytes: usize,
    /// The text for system, summary, entities and new message; empty for history.
    pub text: String,
    /// Message ids for history (oldest first) and the new message.
    pub message_ids: Vec<String>,
    /// Entity ids for the entity section, in rank order.
    pub entity_ids: Vec<String>,
    /// Fact ids for the facts about the user, in prompt order (each fact names its source).
    #[serde(default)]
    pub fact_ids: Vec<String>,
}

/// Why a message was left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DropReason {
    /// The summary already covers it (seq <= covers_up_to_seq).
    CoveredBySummary,
    /// The token budget had no room for it.
    OverBudget,
    /// The request byte cap had no room for it.
    ByteCap,
    /// The message is an error record.
    Errored,
    /// Nothing to send.
    Empty,
    /// It comes after the new message: an earlier reply to the message being re-sent (a retry after
    /// a failed or cut-off reply). A prompt only carries what came before the message it answers.
    AfterNewMessage,
    /// A question of the user's whose turn failed (the reply after it is an error record) and that
    /// another message of theirs follows: sending it would put two of their messages in a row, the
    /// older one a question the model would answer late. (Two of the user's messages in a row
    /// without a failed reply between, as an import may hold, are both sent: they are their words.) (`history::ended_marker` says what is sent of a
    /// reply that did not end).
    Unanswered,
    /// Kept out of the prompt by the app it was imported from, shown in the chat
    /// (`MessageMeta::hidden`).
    Hidden,
}

/// A message left out, with the reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dropped {
    pub message_id: String,
    pub seq: u64,
    pub reason: DropReason,
}

/// The result of assembly. Going over budget is reported here, never an error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Assembly {
    pub prompt: Prompt,
    /// Included sections in prompt order.
    pub sections: Vec<Section>,
    /// History ids (oldest first), then the new message's id.
    pub included_message_ids: Vec<String>,
    /// Left-out history messages, oldest first.
    pub dropped: Vec<Dropped>,
    /// Included messages that were cut at `max_message_chars`.
    pub truncated_message_ids: Vec<String>,
    /// Why the summary was left out, if there was one and it was.
    pub summary_dropped: Option<DropReason>,
    /// The whole summary did not fit: its least telling sentences were left out
    /// (`memory::summary::shorten`).
    #[serde(default)]
    pub summary_shortened: bool,
    /// Ranked entities that did not fit their share.
    pub entities_omitted: usize,
    /// Why the facts about the user were left out, when there were some and none fit.
    #[serde(default)]
    pub user_facts_dropped: Option<DropReason>,
    /// Facts about the user that could have gone in and did not fit their share.
    #[serde(default)]
    pub user_facts_omitted: usize,
    /// The passages of other conversations carried: each one's conversation and day
    /// (`memory::recall::passages_detail`); empty when none.
    #[serde(default)]
    pub recall_detail: String,
    pub total_tokens: u32,
    pub total_bytes: usize,
    /// context_tokens - reply_reserve_tokens.
    pub budget_tokens: u32,
    pub max_bytes: usize,
    pub over_budget: bool,
    pub over_byte_cap: bool,
    /// Messages the summary does not cover were dropped for space: a memory update is due.
    pub history_overflow: bool,
    pub new_message_id: String,
    /// Highest seq of the history considered (excluding the new message); None if there was none.
    /// The turn machine checks it to refuse a context built from stale history.
    pub history_through_seq: Option<u64>,
}

impl Assembly {
    pub fn section(&self, kind: SectionKind) -> Option<&Section> {
        self.sections.iter().find(|s| s.kind == kind)
    }

    /// The facts about the user the prompt carries, in prompt order, out of `facts` (those the
    /// assembly was given).
    pub fn carried_facts<'f>(&self, facts: &'f [UserFact]) -> Vec<&'f UserFact> {
        self.section(SectionKind::UserFacts)
            .map_or_else(Vec::new, |s| {
                s.fact_ids
                    .iter()
                    .filter_map(|id| facts.iter().find(|f| &f.id == id))
                    .collect()
            })
    }

    /// The passages of other conversations the prompt carries, in prompt order, out of `recall`
    /// (those the assembly was given).
    pub fn carried_passages<'p>(&self, recall: &'p [Passage]) -> Vec<&'p Passage> {
        self.section(SectionKind::Recall)
            .map_or_else(Vec::new, |s| {
                s.message_ids
                    .iter()
                    .filter_map(|id| recall.iter().find(|p| &p.message_id == id))
                    .collect()
            })
    }

    /// What the inspector says of the facts about the user: how many went in and how many were
    /// left out for space ("3 facts, 2 left out for space"), or why none did; empty when there
    /// were none to carry.
    pub fn user_facts_detail(&self) -> String {
        let carried = self
            .section(SectionKind::UserFacts)
            .map_or(0, |s| s.fact_ids.len());
        let why = match self.user_facts_dropped {
            Some(DropReason::ByteCap) => "no room under the request size cap",
            Some(_) => "no room in the token budget",
            None => "",
        };
        match (carried, self.user_facts_omitted) {
            (0, 0) => String::new(),
            (0, n) => format!("{} left out: {why}", plural(n, "fact", "facts")),
            (c, 0) => plural(c, "fact", "facts"),
            (c, n) => format!("{}, {n} left out for space", plural(c, "fact", "facts")),
        }
    }
}

/// Upper estimate of the bytes `s` takes inside a JSON string.
pub fn json_len(s: &str) -> usize {
    let extra: usize = s
        .bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' => 1,
            0..=0x1f => 5,
            _ => 0,
        })
        .sum();
    s.len() + extra
}

/// Running totals against the two limits.
struct Meter {
    tokens: u64,
    bytes: usize,
    budget: u64,
    max_bytes: usize,
}

impl Meter {
    /// Whether a cost fits; the reason when it does not.
    fn check(&self, tokens: u32, bytes: usize) -> Result<(), DropReason> {
        if self.tokens + tokens as u64 > self.budget {
            Err(DropReason::OverBudget)
        } else if self.bytes.saturating_add(bytes) > self.max_bytes {
            Err(DropReason::ByteCap)
        } else {
            Ok(())
        }
    }
    fn add(&mut self, tokens: u32, bytes: usize) {
        self.tokens += tokens as u64;
        self.bytes = self.bytes.saturating_add(bytes);
    }
}

/// Fewer tokens than this left for a shortened summary: leave it out instead.
const MIN_SUMMARY_TOKENS: u32 = 24;

/// The summary section: the whole `text` if it fits `meter`, else the sentences
/// [`shorten`] keeps within what is left after `reserve` tokens (the entities' share); the bool says
/// it was shortened. Why it was left out when not even that fits.
fn summary_section<E: TokenEstimator + ?Sized>(
    text: &str,
    est: &E,
    meter: &Meter,
    reserve: u32,
) -> Result<(Section, bool), DropReason> {
    let section = |text: String| {
        let text = format!("{SUMMARY_HEADING}\n{text}");
        Section {
            kind: SectionKind::Summary,
            tokens: est.estimate(&text).saturating_add(2),
            bytes: json_len(&text) + 2,
            text,
            message_ids: Vec::new(),
            entity_ids: Vec::new(),
            fact_ids: Vec::new(),
        }
    };
    let whole = section(text.to_string());
    let Err(reason) = meter.check(whole.tokens, whole.bytes) else {
        return Ok((whole, false));
    };
    let room = meter
        .budget
        .saturating_sub(meter.tokens + reserve as u64)
        .min(u32::MAX as u64) as u32;
    if room < MIN_SUMMARY_TOKENS {
        return Err(reason);
    }
    // Aim by the whole text's characters per token, then tighten until it fits (a few rounds).
    let mut chars = (text.len() as u64 * room as u64 / whole.tokens.max(1) as u64) as usize;
    for _ in 0..8 {
        let cut = shorten(text, chars);
        if cut.is_empty() {
            break;
        }
        let part = section(cut);
        if part.tokens <= room && meter.check(part.tokens, part.bytes).is_ok() {
            return Ok((part, true));
        }
        chars = chars * 4 / 5;
    }
    Err(reason)
}

/// The section of the user's statements memory does not hold yet (`statements`, oldest first): all of
/// them if they fit `meter`, else the most telling ones ([`shorten`]) in what is left; `None` when
/// there are none or not even a few fit.
fn pending_section<E: TokenEstimator + ?Sized>(
    statements: &[&str],
    est: &E,
    meter: &Meter,
) -> Option<Section> {
    if statements.is_empty() {
        return None;
    }
    let section = |body: String| {
        let text = format!("{PENDING_HEADING}\n{body}");
        Section {
            kind: SectionKind::Pending,
            tokens: est.estimate(&text).saturating_add(2),
            bytes: json_len(&text) + 2,
            text,
            message_ids: Vec::new(),
            entity_ids: Vec::new(),
            fact_ids: Vec::new(),
        }
    };
    let body = statements.join(" ");
    let whole = section(body.clone());
    if meter.check(whole.tokens, whole.bytes).is_ok() {
        return Some(whole);
    }
    let room = meter
        .budget
        .saturating_sub(meter.tokens)
        .min(u32::MAX as u64) as u32;
    if room < MIN_SUMMARY_TOKENS {
        return None;
    }
    let mut chars = (body.len() as u64 * room as u64 / whole.tokens.max(1) as u64) as usize;
    for _ in 0..8 {
        let cut = shorten(&body, chars);
        if cut.is_empty() {
            break;
        }
        let part = section(cut);
        if meter.check(part.tokens, part.bytes).is_ok() {
            return Some(part);
        }
        chars = chars * 4 / 5;
    }
    None
}

/// One compact line for an entity: name, type, aliases, description, properties and its live
/// relationships (closed ones, with `valid_to`, are history and left out).
pub fn render_entity(e: &EntityNode, names: &HashMap<&str, &str>, max_chars: usize) -> String {
    let mut line = format!("- {} ({}", one_line(&e.name), e.entity_type.as_str());
    let aliases: Vec<String> = e
        .aliases
        .iter()
        .map(|a| one_line(a))
        .filter(|a| !a.is_empty())
        .collect();
    if !aliases.is_empty() {
        line.push_str("; aka ");
        line.push_str(&aliases.join(", "));
    }
    line.push(')');
    let desc = one_line(&e.description);
    if !desc.is_empty() {
        line.push_str(": ");
        line.push_str(&desc);
    }
    if !e.properties.is_empty() {
        let props: Vec<String> = e
            .properties
            .iter()
            .map(|(k, v)| format!("{}={}", one_line(k), one_line(v)))
            .collect();
        line.push_str(" | ");
        line.push_str(&props.join(", "));
    }
    let live: Vec<String> = e
        .relationships
        .iter()
        .filter(|r| r.valid_to.is_none())
        .map(|r| {
            let target = names
                .get(r.target_id.as_str())
                .copied()
                .unwrap_or(r.target_id.as_str());
            let strength = if r.strength.is_finite() {
                r.strength.clamp(0.0, 1.0)
            } else {
                0.0
            };
            format!(
                "{} → {} ({:.2})",
                one_line(&r.relationship),
                one_line(target),
                strength
            )
        })
        .collect();
    if !live.is_empty() {
        line.push_str(" | ");
        line.push_str(&live.join("; "));
    }
    truncate_chars(&line, max_chars).0
}

/// The entity section as it fills: placed lines with their rank, their cost, and the ranks left out.
struct EntitySection<'a> {
    entities: &'a [EntityNode],
    names: HashMap<&'a str, &'a str>,
    line_cap: usize,
    heading: (u32, usize),
    placed: Vec<(usize, String)>,
    left: Vec<usize>,
    tokens: u32,
    bytes: usize,
}

impl<'a> EntitySection<'a> {
    fn new<E: TokenEstimator + ?Sized>(
        entities: &'a [EntityNode],
        est: &E,
        share: u32,
        max_chars: usize,
    ) -> Self {
        EntitySection {
            entities,
            names: entities
                .iter()
                .map(|e| (e.id.as_str(), e.name.as_str()))
                .collect(),
            // One line takes at most about a third of the share (at 4 characters a token), name
            // first: a model that wrote paragraphs into one entity cannot crowd out the others.
            line_cap: max_chars.min((share as usize * 4 / 3).max(MIN_ENTITY_LINE_CHARS)),
            heading: (
                est.estimate(ENTITIES_HEADING) + 2,
                json_len(ENTITIES_HEADING) + 2,
            ),
            placed: Vec::new(),
            left: Vec::new(),
            tokens: 0,
            bytes: 0,
        }
    }

    /// Places the `candidates` (ranks, in order) while the section stays within `limit` tokens and
    /// the meter allows; after [`ENTITY_MAX_MISSES`] misses in a row the rest are left out unrendered.
    fn fill<E: TokenEstimator + ?Sized>(
        &mut self,
        est: &E,
        meter: &mut Meter,
        limit: u32,
        candidates: Vec<usize>,
    ) {
        let mut misses = 0;
        for (i, &rank) in candidates.iter().enumerate() {
            if misses >= ENTITY_MAX_MISSES || self.tokens + MIN_ENTITY_TOKENS > limit {
                self.left.extend_from_slice(&candidates[i..]);
                return;
            }
            let line = render_entity(&self.entities[rank], &self.names, self.line_cap);
            let mut tokens = est.estimate(&line).saturating_add(1);
            let mut bytes = json_len(&line) + 1;
            if self.placed.is_empty() {
                tokens += self.heading.0;
                bytes += self.heading.1;
            }
            if self.tokens.saturating_add(tokens) <= limit && meter.check(tokens, bytes).is_ok() {
                meter.add(tokens, bytes);
                self.tokens += tokens;
                self.bytes += bytes;
                self.placed.push((rank, line));
                misses = 0;
            } else {
                self.left.push(rank);
                misses += 1;
            }
        }
    }

    /// Lines and ids in rank order, tokens, bytes, and how many were left out.
    fn finish(mut self) -> (Vec<String>, Vec<String>, u32, usize, usize) {
        sort_by_key(&mut self.placed, |(rank, _)| *rank);
        let ids = self
            .placed
            .iter()
            .map(|(rank, _)| self.entities[*rank].id.clone())
            .collect();
        let lines = self.placed.into_iter().map(|(_, line)| line).collect();
        (lines, ids, self.tokens, self.bytes, self.left.len())
    }
}

fn is_empty_message(m: &Message) -> bool {
    m.content.trim().is_empty() && m.meta.tool_calls.is_empty() && m.meta.attachments.is_empty()
}

/// A history message rendered and costed, waiting to be placed.
struct Candidate {
    index: usize,
    wire: WireMessage,
    truncated: bool,
    tokens: u32,
    bytes: usize,
}

/// Walks history backwards, including what fits and recording what is dropped.
struct HistoryWalk<'a, E: TokenEstimator + ?Sized> {
    history: &'a [Message],
    new_id: &'a str,
    /// Messages with a higher seq came after the new message (see `DropReason::AfterNewMessage`).
    new_seq: u64,
    est: &'a E,
    max_chars: usize,
    /// What images cost is the protocol's rule (`attach::image_tokens`).
    protocol: Protocol,
    /// Next index to look at, walking down; `None` when the walk has passed the oldest message.
    next: Option<usize>,
    included: Vec<Candidate>,
    dropped: Vec<Dropped>,
    /// Set once a message did not fit: every older one is dropped with this reason.
    blocked: Option<DropReason>,
    /// Whether the newest message sent after the one the walk is at is the user's (at first, the
    /// new message): a user message below it is [`DropReason::Unanswered`].
    newer_is_user: bool,
    /// Transcript format pays its preamble with the first included message.
    preamble_tokens: u32,
    preamble_bytes: usize,
}

impl<E: TokenEstimator + ?Sized> HistoryWalk<'_, E> {
    /// Why message `i` is left out whatever the room: after the new message, hidden from the
    /// model, an error record,
    /// nothing to send, an unanswered question, covered by the summary (`covered_drop`).
    fn left_out(&self, i: usize, covered_drop: impl Fn(&Message) -> bool) -> Option<DropReason> {
        let m = &self.history[i];
        if m.seq > self.new_seq {
            Some(DropReason::AfterNewMessage)
        } else if m.meta.hidden {
            Some(DropReason::Hidden)
        } else if m.status == MessageStatus::Error {
            Some(DropReason::Errored)
        } else if is_empty_message(m) && ended_marker(m).is_none() {
            Some(DropReason::Empty)
        } else if m.role == Role::User && self.newer_is_user && self.reply_failed(i) {
            Some(DropReason::Unanswered)
        } else if covered_drop(m) {
            Some(DropReason::CoveredBySummary)
        } else {
            None
        }
    }

    /// Drops every message the walk has not reached: on an anchor (`assemble_on`) the memory it
    /// holds stands for them.
    fn drop_older(&mut self) {
        while let Some(i) = self.next {
            if self.history[i].id != self.new_id {
                let reason = self
                    .left_out(i, |_| false)
                    .unwrap_or(DropReason::CoveredBySummary);
                self.drop_msg(i, reason);
            }
            self.next = i.checked_sub(1);
        }
    }

    /// Whether the message after `i` is a reply that failed (an error record): `i`'s turn failed.
    fn reply_failed(&self, i: usize) -> bool {
        self.history
            .get(i + 1)
            .is_some_and(|n| n.role == Role::Assistant && n.status == MessageStatus::Error)
    }

    fn drop_msg(&mut self, i: usize, reason: DropReason) {
        let m = &self.history[i];
        self.dropped.push(Dropped {
            message_id: m.id.clone(),
            seq: m.seq,
            reason,
        });
    }

    /// Message `m` on the wire and what it costs (with the transcript's preamble when it is the
    /// first taken). A reply whose tool results do not fit what is left has them shortened, the
    /// oldest first, down to `tools::MIN_SHORTENED` each, before the message is given up: the
    /// newer messages, taken before it, keep theirs whole.
    fn fitted(&self, m: &Message, meter: &Meter) -> (WireMessage, bool, u32, usize) {
        let (mut wire, mut truncated) = render_message(m, self.max_chars);
        let (mut tokens, mut bytes) = self.cost(&wire);
        let mut chars = result_chars(&wire.tool_calls);
        while meter.check(tokens, bytes).is_err() && chars > MIN_SHORTENED {
            chars /= 2;
            let (calls, _) = carried_calls(&m.meta.tool_calls, chars);
            if calls == wire.tool_calls {
                break;
            }
            wire.tool_calls = calls;
            truncated = true;
            (tokens, bytes) = self.cost(&wire);
        }
        (wire, truncated, tokens, bytes)
    }

    /// Tokens and bytes of `wire` as a history message: its text, images and tool calls (each
    /// call's name, arguments and result as `tools::model_text` sends it).
    fn cost(&self, wire: &WireMessage) -> (u32, usize) {
        let images = attach::images_cost(self.protocol, &wire.images);
        let mut tokens = self
            .est
            .estimate(&wire.content)
            .saturating_add(MESSAGE_OVERHEAD_TOKENS)
            .saturating_add(images.0);
        let mut bytes = json_len(&wire.content) + MESSAGE_OVERHEAD_BYTES + images.1;
        for c in &wire.tool_calls {
            let (result, _) = model_text(c);
            for text in [c.name.as_str(), c.arguments.as_str(), result.as_str()] {
                tokens = tokens.saturating_add(self.est.estimate(text));
                bytes += json_len(text);
            }
            tokens = tokens.saturating_add(2 * MESSAGE_OVERHEAD_TOKENS);
            bytes += 2 * MESSAGE_OVERHEAD_BYTES;
        }
        if self.included.is_empty() {
            tokens = tokens.saturating_add(self.preamble_tokens);
            bytes += self.preamble_bytes;
        }
        (tokens, bytes)
    }

    /// Walk down, including what fits, until `limit` messages were taken or `stop_at` says stop.
    /// `covered_drop`: covered messages are dropped as `CoveredBySummary` instead of considered.
    /// Once blocked, only the final (`drain`) walk goes on, dropping everything older.
    fn walk(
        &mut self,
        meter: &mut Meter,
        limit: &mut usize,
        stop_at: impl Fn(&Message) -> bool,
        covered_drop: impl Fn(&Message) -> bool,
        drain: bool,
    ) {
        while let Some(i) = self.next {
            let m = &self.history[i];
            if m.id == self.new_id {
                self.next = i.checked_sub(1);
                continue;
            }
            if let Some(reason) = self.left_out(i, &covered_drop) {
                self.drop_msg(i, reason);
                self.next = i.checked_sub(1);
                continue;
            }
            if let Some(reason) = self.blocked {
                if !drain {
                    return;
                }
                self.drop_msg(i, reason);
                self.next = i.checked_sub(1);
                continue;
            }
            if *limit == 0 || stop_at(m) {
                return;
            }
            let (wire, truncated, tokens, bytes) = self.fitted(m, meter);
            match meter.check(tokens, bytes) {
                Ok(()) => {
                    meter.add(tokens, bytes);
                    self.newer_is_user = m.role == Role::User;
                    self.included.push(Candidate {
                        index: i,
                        wire,
                        truncated,
                        tokens,
                        bytes,
                    });
                    *limit -= 1;
                }
                Err(reason) => {
                    self.blocked = Some(reason);
                    self.drop_msg(i, reason);
                }
            }
            self.next = i.checked_sub(1);
        }
    }
}

/// The characters of `calls`' results together.
fn result_chars(calls: &[crate::engine::model::ToolCall]) -> usize {
    calls
        .iter()
        .map(|c| c.result.as_deref().map_or(0, |r| r.chars().count()))
        .sum()
}

/// The user messages before `new` that the summary does not cover and that say something, as indexes
/// into `history`: the ones whose statements may wait in the prompt (`memory::pending`), the newest
/// [`MAX_PENDING_MESSAGES`] of them.
fn uncovered_user_messages(
    history: &[Message],
    new: &Message,
    is_covered: impl Fn(&Message) -> bool,
) -> Vec<usize> {
    let all: Vec<usize> = history
        .iter()
        .enumerate()
        .filter(|(_, m)| {
            m.role == crate::engine::model::Role::User
                && m.id != new.id
                && m.seq < new.seq
                && !is_covered(m)
                && matches!(
                    m.status,
                    MessageStatus::Complete | MessageStatus::Interrupted
                )
                && !is_empty_message(m)
        })
        .map(|(i, _)| i)
        .collect();
    all[all.len().saturating_sub(MAX_PENDING_MESSAGES)..].to_vec()
}

/// What `memory::pending` reads: each uncovered message (text, time, and that its statements may
/// be carried; step 7 leaves out those of the messages history carries whole; at the index of
/// `uncovered`), then each fact about the user said elsewhere after the summary was made
/// (`elsewhere`, oldest first: its claims count, its statements are the facts section's), then the
/// new message, whose claims count but whose statements are not carried. A fact said elsewhere
/// follows the messages even when said before some: it is current, so none of them supersedes it
/// (taking that message in would have made it past).
fn said_of<'a>(
    history: &'a [Message],
    uncovered: &[usize],
    elsewhere: &[(&'a str, Millis)],
    new: &'a Message,
) -> Vec<(&'a str, Millis, bool)> {
    uncovered
        .iter()
        .map(|&i| (history[i].content.as_str(), history[i].created_at, true))
        .chain(elsewhere.iter().map(|&(text, at)| (text, at, false)))
        .chain(std::iter::once((
            new.content.as_str(),
            new.created_at,
            false,
        )))
        .collect()
}

/// The facts about the user of `input` said elsewhere after its summary was made
/// (`memory::user::said_after`): none without a summary or facts.
fn said_since_summary<'a>(input: &AssemblyInput<'a>) -> Vec<(&'a str, Millis)> {
    let Some(summary) = input.summary else {
        return Vec::new();
    };
    if input.user_facts.is_empty() {
        return Vec::new();
    }
    let here: std::collections::HashSet<&str> =
        input.history.iter().map(|m| m.id.as_str()).collect();
    said_after(input.user_facts, summary.updated_at, &here)
}

/// The tokens held for the pending statements before history takes the rest: what they all cost,
/// at most [`PENDING_SHARE_PERCENT`] of the budget and what is left.
fn pending_hold<E: TokenEstimator + ?Sized>(
    pending: &crate::engine::memory::Pending,
    est: &E,
    meter: &Meter,
    budget: u32,
) -> u32 {
    if pending.statements.is_empty() {
        return 0;
    }
    let share = (budget as u64 * PENDING_SHARE_PERCENT as u64 / 100) as u32;
    let all: u32 = pending
        .statements
        .iter()
        .map(|(_, s)| est.estimate(s).saturating_add(1))
        .sum();
    let left = meter
        .budget
        .saturating_sub(meter.tokens)
        .min(u32::MAX as u64) as u32;
    all.saturating_add(est.estimate(PENDING_HEADING) + 2)
        .min(share)
        .min(left)
}

/// Whether this prompt carries a fact said in this conversation already: its message is one the
/// summary does not cover (the history or the pending statements carry it), or the summary placed
/// holds most of its words (at least half its [`support_terms`]). A fact from a covered message that
/// the summary lost (a small model's summary drops what it likes) is carried as a fact: what was said
/// is never lost to a summary. Facts from other conversations, or added by hand, are not carried here.
fn carried_here(
    fact: &UserFact,
    history: &[Message],
    covers: Option<u64>,
    summary_terms: &std::collections::HashSet<String>,
) -> bool {
    let Some(source) = &fact.source else {
        return false;
    };
    let Some(message) = history.iter().find(|m| m.id == source.message_id) else {
        return false;
    };
    if !covered(covers)(message) {
        return true;
    }
    let terms = support_terms(&fact.text);
    let held = terms.iter().filter(|t| summary_terms.contains(*t)).count();
    !terms.is_empty() && held * 2 >= terms.len()
}

/// Whether the summary, covering up to `covers`, covers a message.
fn covered(covers: Option<u64>) -> impl Fn(&Message) -> bool + Copy {
    move |m: &Message| covers.is_some_and(|c| m.seq <= c)
}

/// The history walk, set up to start at the newest message (the transcript format pays its
/// preamble with the first message it includes).
fn history_walk<'a, E: TokenEstimator + ?Sized>(
    input: &AssemblyInput<'a>,
    est: &'a E,
) -> HistoryWalk<'a, E> {
    let transcript = input.config.history_format == HistoryFormat::Transcript;
    HistoryWalk {
        history: input.history,
        new_id: &input.new_message.id,
        new_seq: input.new_message.seq,
        est,
        max_chars: input.config.max_message_chars,
        protocol: input.protocol,
        next: input.history.len().checked_sub(1),
        included: Vec::new(),
        dropped: Vec::new(),
        blocked: None,
        newer_is_user: input.new_message.role == Role::User,
        preamble_tokens: if transcript {
            est.estimate(TRANSCRIPT_OPEN) + 12
        } else {
            0
        },
        preamble_bytes: if transcript {
            json_len(TRANSCRIPT_OPEN) + 32
        } else {
            0
        },
    }
}

/// The state assembly carries from step to step (module doc): the limits, the meter, the history
/// walk and what the earlier steps decided.
struct Assembler<'a, E: TokenEstimator + ?Sized> {
    input: AssemblyInput<'a>,
    est: &'a E,
    /// `context_tokens - reply_reserve_tokens`.
    budget: u32,
    meter: Meter,
    walk: HistoryWalk<'a, E>,
    /// How many of the last N messages are still to be taken.
    recent_left: usize,
    /// The summary, when it has text.
    summary: Option<&'a ConversationSummary>,
    /// The summary's `covers_up_to_seq`.
    covers: Option<u64>,
    /// The user messages the summary does not cover (indexes into history).
    uncovered: Vec<usize>,
    /// What `memory::pending` makes of them (every uncovered message's statements; step 7 leaves
    /// out those of the messages history carries whole).
    pending: Pending,
    /// Tokens held for their statements until step 7.
    held: u32,
    /// The facts about the user said elsewhere since the summary was made (text, when), oldest
    /// first: what they supersede in this conversation's memory is past in the prompt.
    elsewhere: Vec<(&'a str, Millis)>,
    /// Tokens and bytes of the system prompt and of the new message.
    system: (u32, usize),
    new_cost: (u32, usize),
    /// The new message as it goes: its text, its files' blocks, its images.
    new_wire: WireMessage,
}

/// What step 3 placed of the facts about the user: the section, why none went in, how many were
/// left out.
type PlacedFacts = (Option<Section>, Option<DropReason>, usize);

/// What step 3 placed of the passages of other conversations: the section and its detail.
type PlacedRecall = (Option<Section>, String);

/// What steps 3 to 8 placed besides history.
struct Placed {
    summary: Option<Section>,
    summary_dropped: Option<DropReason>,
    summary_shortened: bool,
    user_facts: PlacedFacts,
    recall: PlacedRecall,
    pending: Option<Section>,
    /// The entity lines and ids in rank order, their tokens and bytes.
    entities: (Vec<String>, Vec<String>, u32, usize),
    entities_omitted: usize,
    history_overflow: bool,
}

/// The placed history messages, oldest first.
struct PlacedHistory {
    wire: Vec<WireMessage>,
    ids: Vec<String>,
    truncated_ids: Vec<String>,
    tokens: u32,
    bytes: usize,
}

impl PlacedHistory {
    /// Its section of the prompt; none when no message was placed.
    fn section(&self) -> Option<Section> {
        (!self.wire.is_empty()).then(|| Section {
            kind: SectionKind::History,
            tokens: self.tokens,
            bytes: self.bytes,
            text: String::new(),
            message_ids: self.ids.clone(),
            entity_ids: Vec::new(),
            fact_ids: Vec::new(),
        })
    }
}

impl<'a, E: TokenEstimator + ?Sized> Assembler<'a, E> {
    /// Step 1: the mandatory parts (system prompt and new message) on the meter, the history walk
    /// set up, and the room held for the pending statements.
    fn start(input: AssemblyInput<'a>, est: &'a E) -> Self {
        let cfg = input.config;
        let budget = cfg.context_tokens.saturating_sub(cfg.reply_reserve_tokens);
        let new = input.new_message;
        let system = (
            est.estimate(input.system_prompt),
            json_len(input.system_prompt),
        );
        let (new_wire, _) = render_new(new, attach::file_chars(budget));
        let images = attach::images_cost(input.protocol, &new_wire.images);
        let new_cost = (
            est.estimate(&new_wire.content)
                .saturating_add(MESSAGE_OVERHEAD_TOKENS)
                .saturating_add(images.0),
            json_len(&new_wire.content) + MESSAGE_OVERHEAD_BYTES + images.1,
        );
        let meter = Meter {
            tokens: system.0 as u64 + new_cost.0 as u64,
            bytes: REQUEST_OVERHEAD_BYTES + system.1 + new_cost.1,
            budget: budget as u64,
            max_bytes: cfg.max_request_bytes,
        };
        let summary = input.summary.filter(|s| !s.text.trim().is_empty());
        let mut assembler = Assembler {
            input,
            est,
            budget,
            meter,
            walk: history_walk(&input, est),
            recent_left: cfg.recent_messages,
            summary,
            covers: summary.map(|s| s.covers_up_to_seq),
            uncovered: Vec::new(),
            pending: Pending::default(),
            held: 0,
            elsewhere: said_since_summary(&input),
            system,
            new_cost,
            new_wire,
        };
        assembler.hold_pending();
        assembler
    }

    /// Holds room for the user's statements from the uncovered messages, before history takes its
    /// share: long replies of a small model would otherwise push the statements of a user who keeps
    /// typing out of the prompt before any update covers them.
    fn hold_pending(&mut self) {
        let (history, new) = (self.input.history, self.input.new_message);
        self.uncovered = uncovered_user_messages(history, new, covered(self.covers));
        // Read once: whether history carries a message whole is known only after step 2, and
        // step 7 leaves those out.
        self.pending = memory_pending(
            self.summary.map(|s| s.text.as_str()),
            &said_of(history, &self.uncovered, &self.elsewhere, new),
        );
        self.held = pending_hold(&self.pending, self.est, &self.meter, self.budget);
        self.meter.tokens += self.held as u64;
    }

    /// The entities without what the facts about the user said elsewhere since the summary was
    /// made end (`memory::supersede::forget_gone` over the summary as step 3 carries it and those
    /// facts: an alias or property naming a thing gone, or a place or job of a sentence made past),
    /// as the conversation's next update would; `None` when that changes nothing. Before step 3.
    fn entities_since_summary(&self) -> Option<Vec<EntityNode>> {
        let since = self.elsewhere.first()?.1;
        if self.input.entities.is_empty() {
            return None;
        }
        let summary = (self.pending.summary.as_deref())
            .or(self.summary.map(|s| s.text.as_str()))
            .unwrap_or_default();
        let text = std::iter::once(summary)
            .chain(self.elsewhere.iter().map(|(t, _)| *t))
            .collect::<Vec<_>>()
            .join("\n");
        let mut entities = self.input.entities.to_vec();
        (forget_gone(&mut entities, &text, since) > 0).then_some(entities)
    }

    /// The entities' share of the budget, in tokens.
    fn entity_share(&self) -> u32 {
        (self.budget as u64 * ENTITY_SHARE_PERCENT as u64 / 100) as u32
    }

    /// Step 2: the recent messages the summary does not cover.
    fn recent_uncovered(&mut self) {
        let covers = covered(self.covers);
        self.walk.walk(
            &mut self.meter,
            &mut self.recent_left,
            covers,
            |_| false,
            false,
        );
    }

    /// Step 3: the summary, whole or its most telling sentences in what is left beside the entities'
    /// share, with what the uncovered user messages (and the new one) supersede in it carried as
    /// past. Also gives what `memory::pending` made of those messages, for step 7.
    fn place_summary(&mut self) -> (Pending, (Option<Section>, Option<DropReason>, bool)) {
        let pending = std::mem::take(&mut self.pending);
        let summary_text = pending
            .summary
            .clone()
            .or_else(|| self.summary.map(|s| s.text.clone()));
        let reserve = if self.input.entities.is_empty() {
            0
        } else {
            self.entity_share()
        };
        let placed = match &summary_text {
            Some(text) => match summary_section(text.trim(), self.est, &self.meter, reserve) {
                Ok((section, shortened)) => {
                    self.meter.add(section.tokens, section.bytes);
                    (Some(section), None, shortened)
                }
                Err(reason) => (None, Some(reason), false),
            },
            None => (None, None, false),
        };
        (pending, placed)
    }

    /// Step 3, after the summary: the facts about the user within their share and what is left
    /// (the core, then those the recent messages speak of; none an uncovered user message or the
    /// new one supersedes; none this prompt carries already: [`carried_here`]), cut from the end
    /// to the byte cap.
    fn place_user_facts(&mut self, summary: Option<&str>) -> PlacedFacts {
        let share = (self.budget as u64 * USER_FACTS_SHARE_PERCENT as u64 / 100) as u32;
        let left = self.meter.budget.saturating_sub(self.meter.tokens);
        let room = (share as u64).min(left) as u32;
        let Some(picked) = self.pick_facts(summary, room) else {
            return (None, None, 0);
        };
        let mut chosen = picked.chosen;
        let mut reason = DropReason::OverBudget;
        while !chosen.is_empty() {
            let section = user_facts_section(&chosen, self.est);
            match self.meter.check(section.tokens, section.bytes) {
                Ok(()) => {
                    self.meter.add(section.tokens, section.bytes);
                    return (Some(section), None, picked.eligible - chosen.len());
                }
                Err(r) => reason = r,
            }
            chosen.pop();
        }
        let dropped = (picked.eligible > 0).then_some(reason);
        (None, dropped, picked.eligible)
    }

    /// The facts about the user a prompt may carry within `room` tokens, in `pick_for_prompt`'s
    /// order (the core, then those the recent messages speak of; none an uncovered user message or
    /// the new one supersedes; none this prompt carries already: [`carried_here`]); `None` when
    /// there is none to carry.
    fn pick_facts(&self, summary: Option<&str>, room: u32) -> Option<Picked<'a>> {
        let input = self.input;
        let summary_terms = summary.map(support_terms).unwrap_or_default();
        let elsewhere: Vec<&UserFact> = input
            .user_facts
            .iter()
            .filter(|f| !carried_here(f, input.history, self.covers, &summary_terms))
            .collect();
        if elsewhere.is_empty() {
            return None;
        }
        let recent: Vec<&str> = recent_texts(input.history, input.config.recent_messages)
            .chain(std::iter::once(input.new_message.content.as_str()))
            .collect();
        let said: Vec<(&str, Millis)> = self
            .uncovered
            .iter()
            .map(|&i| &input.history[i])
            .chain(std::iter::once(input.new_message))
            .map(|m| (m.content.as_str(), m.created_at))
            .collect();
        Some(pick_for_prompt(
            elsewhere,
            input.project,
            &recent,
            &said,
            room,
            self.est,
        ))
    }

    /// Step 3, after the facts about the user: the passages of other conversations, best first, as
    /// many as fit their share and what is left.
    fn place_recall(&mut self) -> PlacedRecall {
        let passages = self.input.recall;
        let share = (self.budget as u64 * RECALL_SHARE_PERCENT as u64 / 100) as u32;
        let mut n = passages.len();
        while n > 0 {
            let section = recall_section(&passages[..n], self.est);
            if section.tokens <= share && self.meter.check(section.tokens, section.bytes).is_ok() {
                self.meter.add(section.tokens, section.bytes);
                return (Some(section), passages_detail(&passages[..n]));
            }
            n -= 1;
        }
        (None, String::new())
    }

    /// Step 4: the rest of the last N, covered or not.
    fn recent_rest(&mut self) {
        self.walk.walk(
            &mut self.meter,
            &mut self.recent_left,
            |_| false,
            |_| false,
            false,
        );
    }

    /// Step 5: the entities, within their share.
    fn entities_in_share(&mut self) -> EntitySection<'a> {
        let share = self.entity_share();
        let max_chars = self.input.config.max_message_chars;
        let mut entities = EntitySection::new(self.input.entities, self.est, share, max_chars);
        let ranks = (0..self.input.entities.len()).collect();
        entities.fill(self.est, &mut self.meter, share, ranks);
        entities
    }

    /// Step 6: older history: covered messages go when the summary is in (it holds them), the rest
    /// while it fits. Whether messages the summary does not cover were dropped for space.
    fn older_history(&mut self, summary_in: bool) -> bool {
        let covers = covered(self.covers);
        let mut unlimited = usize::MAX;
        self.walk.walk(
            &mut self.meter,
            &mut unlimited,
            |_| false,
            |m| summary_in && covers(m),
            true,
        );
        self.walk
            .dropped
            .iter()
            .any(|d| matches!(d.reason, DropReason::OverBudget | DropReason::ByteCap))
    }

    /// Step 7: the held room given back, the user's statements (of `pending`) from the uncovered
    /// messages history left out.
    fn pending_statements(&mut self, pending: &Pending) -> Option<Section> {
        self.meter.tokens -= self.held as u64;
        let carried: Vec<&str> = pending
            .statements
            .iter()
            .filter(|(i, _)| {
                let index = self.uncovered.get(*i).copied();
                !self.walk.included.iter().any(|c| Some(c.index) == index)
            })
            .map(|(_, s)| s.as_str())
            .collect();
        let section = pending_section(&carried, self.est, &self.meter);
        if let Some(p) = &section {
            self.meter.add(p.tokens, p.bytes);
        }
        section
    }

    /// Step 8, first: the facts about the user that did not fit their share, in what the rest of the
    /// prompt left unused: the choice made again within the section's tokens and that room (in
    /// `pick_for_prompt`'s order), taken as far as it fits when it carries more facts.
    fn facts_in_rest(&mut self, placed: PlacedFacts, summary: Option<&str>) -> PlacedFacts {
        let had = placed.0.as_ref().map_or(0, |s| s.fact_ids.len());
        if placed.2 == 0 {
            return placed;
        }
        let (tokens, bytes) = placed.0.as_ref().map_or((0, 0), |s| (s.tokens, s.bytes));
        let left = self.meter.budget.saturating_sub(self.meter.tokens);
        let room = u32::try_from(tokens as u64 + left).unwrap_or(u32::MAX);
        let Some(picked) = self.pick_facts(summary, room) else {
            return placed;
        };
        self.meter.tokens -= tokens as u64;
        self.meter.bytes -= bytes;
        let mut chosen = picked.chosen;
        while chosen.len() > had {
            let section = user_facts_section(&chosen, self.est);
            if self.meter.check(section.tokens, section.bytes).is_ok() {
                self.meter.add(section.tokens, section.bytes);
                return (Some(section), None, picked.eligible - chosen.len());
            }
            chosen.pop();
        }
        self.meter.add(tokens, bytes);
        placed
    }

    /// Step 8: what history left unused goes to the `entities` that did not fit their share; the
    /// lines, ids, tokens, bytes and how many were left out.
    fn entities_in_rest(
        &mut self,
        mut entities: EntitySection<'a>,
    ) -> (Vec<String>, Vec<String>, u32, usize, usize) {
        let left = std::mem::take(&mut entities.left);
        entities.fill(self.est, &mut self.meter, self.budget, left);
        entities.finish()
    }

    /// Puts it together, oldest first: the sections in prompt order, the prompt and the report.
    fn finish(mut self, placed: Placed) -> Assembly {
        let (input, new) = (self.input, self.input.new_message);
        self.walk.included.reverse();
        self.walk.dropped.reverse();
        let (mut sections, system_text) = system_sections(
            input.system_prompt,
            self.system,
            [
                placed.user_facts.0,
                placed.recall.0,
                placed.summary,
                placed.pending,
            ],
            placed.entities,
        );
        let history = placed_history(input.history, std::mem::take(&mut self.walk.included));
        sections.extend(history.section());
        let mut included_message_ids = history.ids;
        included_message_ids.push(new.id.clone());
        sections.push(Section {
            kind: SectionKind::NewMessage,
            tokens: self.new_cost.0,
            bytes: self.new_cost.1,
            text: new.content.clone(),
            message_ids: vec![new.id.clone()],
            entity_ids: Vec::new(),
            fact_ids: Vec::new(),
        });
        let cfg = input.config;
        let prompt = build_prompt_with(
            cfg.history_format,
            input.protocol,
            system_text,
            &history.wire,
            &self.new_wire,
        );
        let meter = &self.meter;
        Assembly {
            prompt,
            sections,
            included_message_ids,
            dropped: self.walk.dropped,
            truncated_message_ids: history.truncated_ids,
            summary_dropped: placed.summary_dropped,
            summary_shortened: placed.summary_shortened,
            entities_omitted: placed.entities_omitted,
            user_facts_dropped: placed.user_facts.1,
            user_facts_omitted: placed.user_facts.2,
            recall_detail: placed.recall.1,
            total_tokens: u32::try_from(meter.tokens).unwrap_or(u32::MAX),
            total_bytes: meter.bytes,
            budget_tokens: self.budget,
            max_bytes: cfg.max_request_bytes,
            over_budget: meter.tokens > self.budget as u64,
            over_byte_cap: meter.bytes > cfg.max_request_bytes,
            history_overflow: placed.history_overflow,
            new_message_id: new.id.clone(),
            history_through_seq: history_through_seq(input.history, new),
        }
    }
}

/// The contents of the last `n` messages of `history` (the recent messages the facts about the
/// user are chosen by).
fn recent_texts(history: &[Message], n: usize) -> impl Iterator<Item = &str> {
    history[history.len().saturating_sub(n)..]
        .iter()
        .map(|m| m.content.as_str())
}

/// The section of the facts about the user `chosen` (in prompt order): the heading, then a line per
/// fact with the day it was said (`memory::user::fact_line`).
fn user_facts_section<E: TokenEstimator + ?Sized>(chosen: &[&UserFact], est: &E) -> Section {
    let lines: Vec<String> = chosen.iter().map(|f| fact_line(f)).collect();
    let text = format!("{USER_FACTS_HEADING}\n{}", lines.join("\n"));
    Section {
        kind: SectionKind::UserFacts,
        // As `memory::user` counted them: the heading, then each line and its break.
        tokens: lines
            .iter()
            .map(|l| est.estimate(l).saturating_add(1))
            .fold(
                est.estimate(USER_FACTS_HEADING).saturating_add(2),
                u32::saturating_add,
            ),
        bytes: json_len(&text) + 2,
        text,
        message_ids: Vec::new(),
        entity_ids: Vec::new(),
        fact_ids: chosen.iter().map(|f| f.id.clone()).collect(),
    }
}

/// The section of the passages of other conversations: the heading, then a line per passage
/// (`memory::recall::passage_line`).
fn recall_section<E: TokenEstimator + ?Sized>(passages: &[Passage], est: &E) -> Section {
    let lines: Vec<String> = passages.iter().map(passage_line).collect();
    let text = format!("{RECALL_HEADING}\n{}", lines.join("\n"));
    Section {
        kind: SectionKind::Recall,
        tokens: est.estimate(&text).saturating_add(2),
        bytes: json_len(&text) + 2,
        text,
        message_ids: passages.iter().map(|p| p.message_id.clone()).collect(),
        entity_ids: Vec::new(),
        fact_ids: Vec::new(),
    }
}

/// The highest seq of `history` apart from the new message; `None` when there is none.
fn history_through_seq(history: &[Message], new: &Message) -> Option<u64> {
    history.iter().rev().find(|m| m.id != new.id).map(|m| m.seq)
}

/// The system text and its sections in prompt order: the system prompt (`system`: its tokens and
/// bytes), then the `placed` sections (the facts about the user, the passages of other
/// conversations, the summary, the pending statements) and the entity lines that were placed.
fn system_sections(
    system_prompt: &str,
    system: (u32, usize),
    placed: [Option<Section>; 4],
    entities: (Vec<String>, Vec<String>, u32, usize),
) -> (Vec<Section>, String) {
    let mut sections = Vec::with_capacity(6);
    sections.push(Section {
        kind: SectionKind::System,
        tokens: system.0,
        bytes: system.1,
        text: system_prompt.to_string(),
        message_ids: Vec::new(),
        entity_ids: Vec::new(),
        fact_ids: Vec::new(),
    });
    let mut system_text = system_prompt.trim_end().to_string();
    for s in placed.into_iter().flatten() {
        if !system_text.is_empty() {
            system_text.push_str("\n\n");
        }
        system_text.push_str(&s.text);
        sections.push(s);
    }
    let (entity_lines, entity_ids, entity_tokens, entity_bytes) = entities;
    if !entity_lines.is_empty() {
        let text = format!("{ENTITIES_HEADING}\n{}", entity_lines.join("\n"));
        if !system_text.is_empty() {
            system_text.push_str("\n\n");
        }
        system_text.push_str(&text);
        sections.push(Section {
            kind: SectionKind::Entities,
            tokens: entity_tokens,
            bytes: entity_bytes,
            text,
            message_ids: Vec::new(),
            entity_ids,
            fact_ids: Vec::new(),
        });
    }
    (sections, system_text)
}

/// The `included` history messages (oldest first) as wire messages, with their ids, the ids of
/// those cut at `max_message_chars`, and their tokens and bytes.
fn placed_history(history: &[Message], included: Vec<Candidate>) -> PlacedHistory {
    let mut placed = PlacedHistory {
        wire: Vec::with_capacity(included.len()),
        ids: Vec::with_capacity(included.len() + 1),
        truncated_ids: Vec::new(),
        tokens: 0,
        bytes: 0,
    };
    for c in included {
        let m = &history[c.index];
        placed.ids.push(m.id.clone());
        if c.truncated {
            placed.truncated_ids.push(m.id.clone());
        }
        placed.tokens = placed.tokens.saturating_add(c.tokens);
        placed.bytes += c.bytes;
        placed.wire.push(c.wire);
    }
    placed
}

/// Assemble the context for a turn, step by step as the module doc numbers them. See the module
/// doc for the rules.
pub fn assemble<E: TokenEstimator + ?Sized>(input: &AssemblyInput<'_>, est: &E) -> Assembly {
    let corrected;
    let mut a = Assembler::start(*input, est);
    corrected = a.entities_since_summary();
    if let Some(entities) = corrected.as_deref() {
        a.input.entities = entities;
    }
    a.recent_uncovered();
    let (pending, (summary, summary_dropped, summary_shortened)) = a.place_summary();
    let user_facts = a.place_user_facts(summary.as_ref().map(|s| s.text.as_str()));
    let recall = a.place_recall();
    a.recent_rest();
    let entities = a.entities_in_share();
    let history_overflow = a.older_history(summary.is_some());
    let pending = a.pending_statements(&pending);
    let user_facts = a.facts_in_rest(user_facts, summary.as_ref().map(|s| s.text.as_str()));
    let (lines, ids, tokens, bytes, entities_omitted) = a.entities_in_rest(entities);
    a.finish(Placed {
        summary,
        summary_dropped,
        summary_shortened,
        user_facts,
        recall,
        pending,
        entities: (lines, ids, tokens, bytes),
        entities_omitted,
        history_overflow,
    })
}

/// What a prompt kept from an earlier one (`engine::prefix`): its system text with the memory
/// sections as they went, those sections, and the seq of the first history message it carried.
#[derive(Debug, Clone, Copy)]
pub struct Held<'a> {
    pub system: &'a str,
    /// The system-side sections (system prompt, facts, summary, pending, entities) in prompt order.
    pub sections: &'a [Section],
    /// History starts at the first message with this seq or a higher one.
    pub start_seq: u64,
}

/// The prompt on what an earlier one held (`engine::prefix`): `held`'s system text unchanged, then
/// every message from `held.start_seq` on (each left out only for what leaves a message out
/// whatever the room: an error record, hidden, empty, unanswered, after the new message), then the
/// new message; `fresh` (this turn's own assembly) gives the report's other fields. `None` when that
/// history does not fit the budget or the byte cap: the prompt must move on.
pub fn assemble_on<E: TokenEstimator + ?Sized>(
    input: &AssemblyInput<'_>,
    held: Held<'_>,
    fresh: &Assembly,
    est: &E,
) -> Option<Assembly> {
    let cfg = input.config;
    let new = input.new_message;
    let budget = cfg.context_tokens.saturating_sub(cfg.reply_reserve_tokens);
    let (new_wire, _) = render_new(new, attach::file_chars(budget));
    let new_cost = fresh.section(SectionKind::NewMessage)?;
    let (sys_tokens, sys_bytes) = held.sections.iter().fold((0u64, 0usize), |(t, b), s| {
        (t + s.tokens as u64, b + s.bytes)
    });
    let mut meter = Meter {
        tokens: sys_tokens + new_cost.tokens as u64,
        bytes: REQUEST_OVERHEAD_BYTES + sys_bytes + new_cost.bytes,
        budget: budget as u64,
        max_bytes: cfg.max_request_bytes,
    };
    let mut walk = history_walk(input, est);
    let mut unlimited = usize::MAX;
    walk.walk(
        &mut meter,
        &mut unlimited,
        |m| m.seq < held.start_seq,
        |_| false,
        false,
    );
    if walk.blocked.is_some() || meter.tokens > budget as u64 {
        return None;
    }
    walk.drop_older();
    walk.included.reverse();
    walk.dropped.reverse();
    let history = placed_history(input.history, std::mem::take(&mut walk.included));
    let mut sections: Vec<Section> = held.sections.to_vec();
    sections.extend(history.section());
    sections.push(new_cost.clone());
    let mut included_message_ids = history.ids;
    included_message_ids.push(new.id.clone());
    let prompt = build_prompt_with(
        cfg.history_format,
        input.protocol,
        held.system.to_string(),
        &history.wire,
        &new_wire,
    );
    Some(Assembly {
        prompt,
        sections,
        included_message_ids,
        dropped: walk.dropped,
        truncated_message_ids: history.truncated_ids,
        total_tokens: u32::try_from(meter.tokens).unwrap_or(u32::MAX),
        total_bytes: meter.bytes,
        over_budget: false,
        over_byte_cap: false,
        ..fresh.clone()
    })
}
