//! Prompts a server can reuse. A local server with one slot (llama.cpp's, LM Studio's, Ollama's with one
//! parallel request) keeps the KV cache of the last prompt it read, and reads again only what comes
//! after the first token that differs; cloud endpoints bill a cached prefix at a fraction (OpenAI from
//! 1,024 tokens on, Anthropic up to a `cache_control` breakpoint). A prompt assembled afresh each turn
//! changes early: the memory sections sit before the history and change whenever an update lands, and
//! the window of the last N messages slides one message a turn, so every token after the system prompt
//! is read again on every turn.
//!
//! So a conversation's prompt holds an [`Anchor`]: the system text as it went (the memory sections in
//! it) and the first history message it carried. The next turn keeps both and appends, as long as:
//! - the same things shape the prompt ([`Anchor::key`]: system prompt, protocol, history format, the
//!   budget settings, project);
//! - what the anchor carries is still true: its summary is not rolled back or cleared, every fact
//!   about the user it carries is still current and in scope, every entity still exists, and no user
//!   message since makes a sentence of its summary past (`memory::pending`);
//! - history from the anchor on fits the budget (`assemble::assemble_on`), and holds at most
//!   [`SLACK_MESSAGES_PER_RECENT`] times the last N messages more than a fresh prompt would;
//! - the fresh prompt carries no passages of other conversations (a recall turn goes fresh and the
//!   anchor waits for the next);
//! - the prompt is at least [`MIN_HELD_TOKENS`] long, held or fresh (below that a server reads it
//!   again in a moment).
//! Otherwise the turn's fresh assembly goes and becomes the anchor. Nothing is lost while the anchor
//! holds: history carries every message after what its summary covers, verbatim.
//!
//! Deterministic, no clock. Must not import anything outside `crate::engine`.

use crate::engine::assemble::{
    assemble, assemble_on, Assembly, AssemblyInput, DropReason, Held, Section, SectionKind,
};
use crate::engine::history::render_message;
use crate::engine::memory::memory_pending;
use crate::engine::memory::user::in_scope;
use crate::engine::model::{Message, MessageStatus, Prompt, Role, WireMessage};
use crate::engine::tokens::TokenEstimator;

/// Below this many tokens (held or fresh) a prompt is assembled afresh every turn: a server reads it
/// again in a moment, and a short conversation's prompt then says at once what memory holds.
pub const MIN_HELD_TOKENS: u32 = 512;
/// History on an anchor may hold this many times the last N messages more than a fresh prompt.
pub const SLACK_MESSAGES_PER_RECENT: usize = 4;
/// Below this many tokens a memory update is a prompt of its own: the chat prompt costs a server
/// little to read again, and the update's own prompt is the one small models were measured with.
pub const MIN_CONTINUED_TOKENS: u32 = 512;

/// What a conversation's prompt holds from turn to turn (module doc). Kept by the session per
/// conversation and endpoint, never stored: a reload starts afresh.
#[derive(Debug, Clone, PartialEq)]
pub struct Anchor {
    /// What shapes a prompt, as one string; an anchor holds only for the same.
    pub key: String,
    /// The system text as it went, the memory sections in it.
    pub system: String,
    /// The system-side sections, in prompt order.
    pub sections: Vec<Section>,
    /// History starts at this seq.
    pub start_seq: u64,
    /// The summary it carries: version, what it covers and its text as stored.
    pub summary: Option<(u32, u64, String)>,
    /// The highest seq of the history when it was made (user messages after it are read for what
    /// they make past).
    pub through_seq: Option<u64>,
    /// The report of the assembly it was made from.
    report: Report,
}

/// The fields of [`Assembly`] that describe the system-side sections.
#[derive(Debug, Clone, PartialEq, Default)]
struct Report {
    summary_dropped: Option<DropReason>,
    summary_shortened: bool,
    entities_omitted: usize,
    user_facts_dropped: Option<DropReason>,
    user_facts_omitted: usize,
}

impl Anchor {
    /// What shapes a prompt of `input`.
    pub fn key(input: &AssemblyInput<'_>) -> String {
        let c = input.config;
        format!(
            "{:?}|{:?}|{}|{}|{}|{}|{}|{:?}|{}",
            input.protocol,
            c.history_format,
            c.context_tokens,
            c.reply_reserve_tokens,
            c.recent_messages,
            c.max_message_chars,
            c.max_request_bytes,
            input.project,
            input.system_prompt
        )
    }

    /// The anchor of a fresh assembly of `input`.
    pub fn of(input: &AssemblyInput<'_>, fresh: &Assembly) -> Anchor {
        let sections: Vec<Section> = fresh
            .sections
            .iter()
            .filter(|s| !matches!(s.kind, SectionKind::History | SectionKind::NewMessage))
            .cloned()
            .collect();
        let start_seq = fresh
            .section(SectionKind::History)
            .and_then(|h| h.message_ids.first())
            .and_then(|id| input.history.iter().find(|m| &m.id == id))
            .map_or(input.new_message.seq, |m| m.seq);
        let carried_summary = fresh.section(SectionKind::Summary).is_some();
        Anchor {
            key: Anchor::key(input),
            system: fresh.prompt.system.clone(),
            sections,
            start_seq,
            summary: input
                .summary
                .filter(|_| carried_summary)
                .map(|s| (s.version, s.covers_up_to_seq, s.text.clone())),
            through_seq: fresh.history_through_seq,
            report: Report {
                summary_dropped: fresh.summary_dropped,
                summary_shortened: fresh.summary_shortened,
                entities_omitted: fresh.entities_omitted,
                user_facts_dropped: fresh.user_facts_dropped,
                user_facts_omitted: fresh.user_facts_omitted,
            },
        }
    }

    /// Whether what this anchor carries is still true for `input` (module doc).
    pub fn holds(&self, input: &AssemblyInput<'_>) -> bool {
        if self.key != Anchor::key(input) {
            return false;
        }
        if let Some((version, covers, _)) = &self.summary {
            match input.summary {
                Some(s) if s.version >= *version && s.covers_up_to_seq >= *covers => {}
                _ => return false,
            }
        }
        for s in &self.sections {
            let facts_true = s.fact_ids.iter().all(|id| {
                input
                    .user_facts
                    .iter()
                    .any(|f| &f.id == id && in_scope(f, input.project))
            });
            let entities_there = s
                .entity_ids
                .iter()
                .all(|id| input.entities.iter().any(|e| &e.id == id));
            if !facts_true || !entities_there {
                return false;
            }
        }
        !self.made_past(input)
    }

    /// Whether a user message since the anchor was made (or the new one) makes a sentence of its
    /// summary past.
    fn made_past(&self, input: &AssemblyInput<'_>) -> bool {
        let Some((_, _, text)) = &self.summary else {
            return false;
        };
        let after = self.through_seq.unwrap_or(0);
        let said: Vec<(&str, i64, bool)> = input
            .history
            .iter()
            .filter(|m| m.role == Role::User && m.seq > after && m.id != input.new_message.id)
            .chain(std::iter::once(input.new_message))
            .map(|m| (m.content.as_str(), m.created_at, true))
            .collect();
        memory_pending(Some(text), &said).summary.is_some()
    }

    fn held(&self) -> Held<'_> {
        Held {
            system: &self.system,
            sections: &self.sections,
            start_seq: self.start_seq,
        }
    }
}

/// The prompt for `input`: on `anchor` when it holds (module doc), else afresh. Gives the anchor the
/// next turn holds to (`anchor` itself, or the fresh prompt's).
pub fn assemble_held<E: TokenEstimator + ?Sized>(
    input: &AssemblyInput<'_>,
    anchor: Option<&Anchor>,
    est: &E,
) -> (Assembly, Anchor) {
    let fresh = assemble(input, est);
    if let Some(anchor) = anchor {
        if fresh.section(SectionKind::Recall).is_some() {
            return (fresh, anchor.clone());
        }
        if anchor.holds(input) {
            if let Some(mut on) = assemble_on(input, anchor.held(), &fresh, est) {
                let count = |a: &Assembly| {
                    a.section(SectionKind::History)
                        .map_or(0, |h| h.message_ids.len())
                };
                let slack = SLACK_MESSAGES_PER_RECENT * input.config.recent_messages.max(1);
                let long = on.total_tokens.max(fresh.total_tokens) >= MIN_HELD_TOKENS;
                if long && count(&on) <= count(&fresh) + slack {
                    let r = &anchor.report;
                    on.summary_dropped = r.summary_dropped;
                    on.summary_shortened = r.summary_shortened;
                    on.entities_omitted = r.entities_omitted;
                    on.user_facts_dropped = r.user_facts_dropped;
                    on.user_facts_omitted = r.user_facts_omitted;
                    on.recall_detail = String::new();
                    return (on, anchor.clone());
                }
            }
        }
    }
    let next = Anchor::of(input, &fresh);
    (fresh, next)
}

/// The chat prompt a server last read for a conversation, and the reply it gave: what a memory update
/// of that conversation continues (`memory::UpdateRequest::prompt_after`).
#[derive(Debug, Clone, PartialEq)]
pub struct LastPrompt {
    /// The endpoint's server and model (`EndpointProfile::key`).
    pub endpoint_key: String,
    pub prompt: Prompt,
    /// Its tokens, estimated.
    pub tokens: u32,
    /// The reply's message id.
    pub reply_id: String,
}

/// The reply a memory update continues after `last`, as the next chat prompt's history renders it:
/// `Some` when the update goes to the same server and model as the chat (`memory_key`), the prompt
/// is long enough to be worth it ([`MIN_CONTINUED_TOKENS`]), carries no image (the update reads none), and
/// its reply is the newest message the update reads (`span_to_seq`).
pub fn update_continues(
    last: &LastPrompt,
    memory_key: &str,
    messages: &[Message],
    span_to_seq: u64,
    max_message_chars: usize,
) -> Option<WireMessage> {
    if last.endpoint_key != memory_key || last.tokens < MIN_CONTINUED_TOKENS {
        return None;
    }
    if last.prompt.messages.iter().any(|m| !m.images.is_empty()) {
        return None;
    }
    let reply = messages.iter().find(|m| m.id == last.reply_id)?;
    if reply.seq != span_to_seq
        || reply.role != Role::Assistant
        || !matches!(reply.status, MessageStatus::Complete)
    {
        return None;
    }
    Some(render_message(reply, max_message_chars).0)
}
