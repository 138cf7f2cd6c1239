//! The memory protocol: when the summary + entity update runs ([`due`]), the update request
//! ([`prompt`]), parsing and validating the reply ([`parse`]), summary versions ([`summary`]), merging
//! entities into the indexed graph ([`graph`], [`merge`]) and retrieving entities for the prompt
//! ([`retrieve`]). All pure: `now`, ids and limits are arguments.
//! Must not import anything outside `crate::engine` (serde_json and thiserror are crate dependencies).
//!
//! Flow for the session: `due(..)` -> `build_update_request(..)` -> `start_form(..)` (the form
//! remembered for the endpoint) -> send `prompt_for(form)` with `request_options(form)` -> on a refusal
//! (`refused_http` / `refused_stream`) once more with `next_form(..)` -> `parse_reply(text)` (the JSON
//! object or the two-section text) -> `UpdateRequest::ground(..)` -> on `Ok`, `apply_update(..)`; on `Err`, change nothing and show the
//! error with the raw reply.

pub mod catchup;
pub mod due;
pub mod form;
pub mod graph;
pub mod ground;
pub mod merge;
pub mod normalize;
pub mod parse;
pub mod pending;
pub mod prompt;
pub mod reply;
pub mod retrieve;
pub mod schedule;
pub mod shown;
pub mod summary;
pub mod supersede;

pub use due::{
    count_pairs, counts_for_memory, due, retry_allowed, retry_wait, Due, DueInput, DueReason,
    FIRST_RETRY_MS, MAX_RETRY_MS, MAX_RETRY_TURNS,
};
pub use form::{
    forms_for, next_form, refused_http, refused_stream, start_form, update_schema, MemoryForm,
};
pub use graph::Graph;
pub use merge::{merge, ClosedRelationship, MergeContext, MergeReport};
pub use parse::{parse_reply, ParsedEntity, ParsedRelationship, ParsedUpdate};
pub use pending::{pending as memory_pending, Pending};
pub use prompt::{
    build_update_request, reply_tokens, MemoryRequestOptions, UpdateLimits, UpdateRequest,
    UpdateSpan, MEMORY_MAX_TOKENS, MEMORY_MIN_TOKENS, MEMORY_REQUEST_OPENING, MEMORY_TEMPERATURE,
};
pub use reply::ReplyCollector;
pub use retrieve::{describe, rank_for_prompt, retrieve, Retrieved, Why};
pub use schedule::{judge, server_of, Admit, Scheduler, UpdateEnd, Verdict};
pub use summary::{carry_forward, latest, next_summary, restore_summary, summary_max_chars};

use crate::engine::model::{ConversationSummary, EntityScope, Millis};

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
    /// [`due::retry_allowed`]).
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

/// The result of applying a parsed update.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    /// The new summary version, when the reply had a summary.
    pub summary: Option<ConversationSummary>,
    pub report: MergeReport,
}

/// Applies a successfully parsed reply: the next summary version (if the reply had one, with the
/// previous summary's facts it left out carried forward, see [`carry_forward`]) and the merge into
/// `graph`, whose facts the new summary's current claims supersede are then made past
/// ([`supersede::supersede_entities`]). Cannot fail; parse errors are handled before this by not calling it.
#[allow(clippy::too_many_arguments)]
pub fn apply_update(
    parsed: &ParsedUpdate,
    previous: Option<&ConversationSummary>,
    conversation_id: &str,
    span: &UpdateSpan,
    message_count: u64,
    graph: &mut Graph,
    scope: EntityScope,
    now: Millis,
    summary_max_chars: usize,
    new_id: impl FnMut() -> String,
) -> Applied {
    let summary = parsed.summary.as_deref().map(|text| {
        let (text, _) = carry_forward(previous.map(|p| p.text.as_str()), text, summary_max_chars);
        next_summary(previous, conversation_id, &text, span, message_count, now)
    });
    let ctx = MergeContext {
        now,
        source_message_ids: &span.message_ids,
        scope,
    };
    let report = merge(graph, &parsed.entities, &ctx, new_id);
    // What the user said now also makes the entities' older facts past.
    if let Some(s) = &summary {
        supersede::supersede_entities(&mut graph.nodes, &s.text, now);
        supersede::forget_gone(&mut graph.nodes, &s.text, now);
    }
    Applied { summary, report }
}
