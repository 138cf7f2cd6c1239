//! The memory protocol: when the summary + entity update runs ([`due`]), the update request
//! ([`prompt`]), parsing and validating the reply ([`parse`]), holding it to what the request showed
//! ([`read`], [`ground`]), summary versions ([`summary`]), changed facts kept as past ([`supersede`]),
//! merging entities into the indexed graph ([`graph`], [`merge`]), retrieving entities for the
//! prompt ([`retrieve`]), the facts about the user every conversation shares ([`user`]; beyond
//! English, the tables of [`lang`]; those the model proposes, held to the user's words:
//! [`proposed`]) and the passages of other conversations a message refers back
//! to ([`recall`]). All
//! pure: `now`, ids and limits are arguments.
//! Must not import anything outside `crate::engine` (serde_json and thiserror are crate dependencies).
//!
//! The session runs a live update (and a build's chunk) through [`update::Update`], which makes every
//! decision below; the flow it follows: `due(..)` -> `build_update_request(..)` -> `start_form(..)` (the form
//! remembered for the endpoint) -> send `prompt_for(form)` with `request_options(form)` -> on a refusal
//! (`refused_http` / `refused_stream`) once more with `next_form(..)` -> `read_reply(text)` (parsed by
//! `parse_reply`, the JSON object or the two-section text, then `UpdateRequest::ground(..)`) -> on
//! `Ok`, `apply_update(..)`; on `Err`, change nothing and show the error with the raw reply.
//!
//! The submodules import each other only downwards (no loop): [`sentence`], [`normalize`], [`form`]
//! and [`schedule`] are leaves; then [`error`]; [`due`]; [`prompt`] (the request and what it showed);
//! [`parse`] and [`reply`]; [`ground`]; [`supersede`]; [`summary`]; [`read`] (a reply parsed and
//! grounded), [`pending`], [`shown`], [`catchup`] and [`user`] on top, [`proposed`] above [`user`]; [`recall`] beside them (it reads only
//! `normalize`); [`graph`], then [`merge`] and
//! [`retrieve`] beside them; [`lang`] under [`user`] and [`recall`] (it reads `normalize`,
//! `ground` and `supersede`). This file only re-exports them and applies an update; none imports it
//! but [`update`], the update's state machine, on top of them all.

pub mod catchup;
pub mod due;
pub mod error;
pub mod form;
pub mod graph;
pub mod ground;
pub mod lang;
pub mod merge;
pub mod normalize;
pub mod parse;
pub mod pending;
pub mod prompt;
pub mod proposed;
pub mod read;
pub mod recall;
pub mod reply;
pub mod retrieve;
pub mod schedule;
pub mod sentence;
pub mod shown;
pub mod summary;
pub mod supersede;
pub mod update;
pub mod user;

pub use due::{
    count_pairs, counts_for_memory, due, retry_allowed, retry_wait, Due, DueInput, DueReason,
    FIRST_RETRY_MS, MAX_RETRY_MS, MAX_RETRY_TURNS,
};
pub use error::{MemoryError, MemoryFailure, MAX_RAW_REPLY_CHARS};
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
pub use summary::{
    carry_forward, latest, next_summary, restore_summary, restore_version, summary_max_chars,
};

use crate::engine::model::{ConversationSummary, EntityScope, Millis};

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
