//! The memory-update request: a [`Prompt`] whose system text explains the exact reply format, and whose
//! one user message carries the previous summary (or "No previous conversation"), the known entities
//! (id, type, name, aliases, so the model reuses ids) and the role-labelled messages since
//! `covers_up_to_seq`. Also returns the seq range and message ids the update covers.
//! The system text depends on the [`MemoryForm`]: a constrained form asks for the JSON object of
//! [`super::form::update_schema`], the unconstrained one for the two-section text.
//! It also records what the request showed the model ([`ReadMessage`], [`KnownNames`]): grounding
//! holds the reply to it. Reading a reply (parse, ground, supersede) is `read.rs`'s: this module
//! is below it and below grounding, summaries and superseding, and imports none of them.
//! Must not import anything outside `crate::engine`.

use super::due::{counts_for_memory, first_unsettled};
use super::error::MemoryError;
use super::form::MemoryForm;
use super::normalize::truncate_chars;
use super::sentence::sentences;
use crate::engine::format::one_line;
use crate::engine::model::{
    ConversationSummary, EntityNode, MemoryConfig, Message, Millis, Prompt, Role, WireMessage,
};
use crate::engine::request::RequestOptions;
use crate::engine::sort::{sort_by, sort_by_key};

/// Sampling temperature of the memory request: greedy, so the same conversation gives the same
/// memory, and a small model copies facts instead of inventing them.
pub const MEMORY_TEMPERATURE: f32 = 0.0;
/// Reply token limit of the memory request (the most [`reply_tokens`] gives).
pub const MEMORY_MAX_TOKENS: u32 = 2000;
/// The least [`reply_tokens`] gives.
pub const MEMORY_MIN_TOKENS: u32 = 200;

/// The reply token limit of one update: room for a summary as long as the previous summary and the
/// new messages together (at about 4 characters per token) and the entities, between
/// [`MEMORY_MIN_TOKENS`] and [`MEMORY_MAX_TOKENS`]. A model that loops (small ones do, even under a
/// schema) then stops in seconds instead of running on to 2,000 tokens, and a reply cut there still
/// parses (the summary comes first and the cut object is closed).
pub fn reply_tokens(transcript_bytes: usize, previous_summary_bytes: usize) -> u32 {
    let text = (transcript_bytes + previous_summary_bytes) / 4;
    (MEMORY_MIN_TOKENS as usize + text).min(MEMORY_MAX_TOKENS as usize) as u32
}
/// The heading of the summary section.
pub const CONVERSATION_MARKER: &str = "=== CONVERSATION MEMORY ===";
/// The heading of the entity section.
pub const ENTITY_MARKER: &str = "=== ENTITY MEMORY ===";
/// The first words of every memory-update system text (test endpoints recognise the request by it).
pub const MEMORY_REQUEST_OPENING: &str =
    "You maintain the long-term memory of a conversation between a user and an assistant.";
/// What the request says when there is no summary yet.
pub const NO_PREVIOUS: &str = "No previous conversation";

/// Sampling options the request builder applies to the memory request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemoryRequestOptions {
    pub temperature: f32,
    pub max_tokens: u32,
}

impl Default for MemoryRequestOptions {
    fn default() -> Self {
        MemoryRequestOptions {
            temperature: MEMORY_TEMPERATURE,
            max_tokens: MEMORY_MAX_TOKENS,
        }
    }
}

/// Size limits of the request, so the update itself fits the model's context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpdateLimits {
    /// Each message is cut at this many characters (with a `[truncated]` marker).
    pub max_message_chars: usize,
    /// Messages are taken oldest first until their text reaches this many characters; the rest wait
    /// for the next update (the returned span says exactly what was covered). At least one is taken.
    pub max_transcript_chars: usize,
    /// At most this many known entities are listed (most recently updated first).
    pub max_entities: usize,
}

impl Default for UpdateLimits {
    fn default() -> Self {
        UpdateLimits {
            max_message_chars: 2000,
            max_transcript_chars: 16_000,
            max_entities: 200,
        }
    }
}

impl UpdateLimits {
    /// Limits derived from a memory config: the transcript gets what is left of the context after the
    /// reply reserve and about 1,500 tokens of instructions, at a conservative 3 characters per token.
    pub fn from_config(config: &MemoryConfig) -> UpdateLimits {
        let tokens = config
            .context_tokens
            .saturating_sub(MEMORY_MAX_TOKENS)
            .saturating_sub(1500) as usize;
        UpdateLimits {
            max_message_chars: config.max_message_chars.max(1),
            max_transcript_chars: (tokens * 3).max(2000),
            max_entities: 200,
        }
    }
}

/// A message an update read, as the request showed it and grounding needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadMessage {
    pub id: String,
    pub role: Role,
    /// As the request showed it (cut at the request's message limit).
    pub content: String,
    pub created_at: Millis,
}

/// A known entity as the request listed it: its id and its names (name first, then aliases).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownNames {
    pub id: String,
    pub names: Vec<String>,
}

/// The messages an update covers.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UpdateSpan {
    /// Lowest seq included.
    pub from_seq: u64,
    /// Highest seq included: the next summary's `covers_up_to_seq`.
    pub to_seq: u64,
    /// Ids of the included messages, in seq order: the source of every change the update makes.
    pub message_ids: Vec<String>,
}

/// A ready memory-update request.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateRequest {
    /// The prompt for the unconstrained (two-section) form; [`UpdateRequest::prompt_for`] gives any.
    pub prompt: Prompt,
    pub options: MemoryRequestOptions,
    pub span: UpdateSpan,
    /// The user message of the constrained forms (see [`UpdateRequest::prompt_for`]).
    pub structured_user: String,
    /// The same after a chat prompt (see [`UpdateRequest::prompt_after`]): its list of new messages
    /// holds the user's alone (the chat prompt above carries the replies, and what the user said is
    /// what memory is for): a server reads about half as much again for an update.
    pub continued_user: String,
    /// What the user wrote in the span, oldest first (see [`UpdateRequest::ground`]).
    pub user_said: Vec<String>,
    /// The messages of the span as the request showed them, oldest first: what grounding holds the
    /// reply to (`ground`).
    pub read: Vec<ReadMessage>,
    /// The known entities the request listed, with their names.
    pub known: Vec<KnownNames>,
    /// The previous summary's text, if any: the sentences a newer fact makes past
    /// (`supersede`).
    pub previous_text: Option<String>,
}

impl UpdateRequest {
    /// The prompt for `form`: for the two-section text the previous summary, the known entities and
    /// the new messages; for a constrained form the known entities and the new messages.
    pub fn prompt_for(&self, form: MemoryForm) -> Prompt {
        match form {
            MemoryForm::Sections => self.prompt.clone(),
            MemoryForm::Constrained(_) => Prompt {
                system: system_instruction_for(form),
                messages: vec![WireMessage::text(Role::User, self.structured_user.clone())],
            },
        }
    }

    /// The prompt for `form` as a continuation of the chat prompt `chat` the server last read and its
    /// `reply` (as the next chat prompt's history renders it): that prompt, the reply, then one user
    /// message with the instruction of `form` and what [`UpdateRequest::prompt_for`] would send. A
    /// server with one slot then reads only that last message (`engine::prefix`), and the next chat
    /// turn only its new message.
    pub fn prompt_after(&self, form: MemoryForm, chat: &Prompt, reply: &WireMessage) -> Prompt {
        let ask = match form {
            MemoryForm::Sections => format!(
                "{}\n\n{}",
                system_instruction(),
                self.prompt
                    .messages
                    .last()
                    .map_or("", |m| m.content.as_str())
            ),
            MemoryForm::Constrained(_) => {
                format!("{}\n\n{}", structured_instruction(), self.continued_user)
            }
        };
        let mut messages = chat.messages.clone();
        messages.push(reply.clone());
        messages.push(WireMessage::text(Role::User, ask));
        Prompt {
            system: chat.system.clone(),
            messages,
        }
    }

    /// The request options for `form`: temperature, token limit, streaming, and the output schema.
    pub fn request_options(&self, form: MemoryForm) -> RequestOptions {
        RequestOptions {
            temperature: Some(self.options.temperature),
            max_tokens: Some(self.options.max_tokens),
            previous_response_id: None,
            stream: true,
            output: form.output(),
            slot: None,
        }
    }
}

/// The system text for `form`.
pub fn system_instruction_for(form: MemoryForm) -> String {
    match form {
        MemoryForm::Sections => system_instruction(),
        MemoryForm::Constrained(_) => structured_instruction(),
    }
}

/// The system instruction of the constrained forms: what each field holds. Short and concrete,
/// because small local models follow little else (measured with SmolLM2-135M in `make bench`): the
/// summary asks for what the new messages add, and the engine keeps the previous summary's facts
/// (`summary::carry_forward`), so no fact is lost to a rewrite.
pub fn structured_instruction() -> String {
    format!(
        "{MEMORY_REQUEST_OPENING}\n\
Reply with one JSON object:\n\
- \"summary\": what the user told in these new messages, in short sentences: names, places, pets, jobs, \
family, food, dates, numbers, preferences, plans and decisions.\n\
- \"entities\": the people, places, animals and things the new messages name, each with \"id\" (a known \
id, or a new short one), \"type\" (person, place, concept, event, task or other), \"name\", \"aliases\", \
\"description\", \"properties\" (key/value facts) and \"relationships\" (targetId, relationship such as \
lives_in, strength from 0 to 1; 0 means it no longer holds)."
    )
}

/// Every sentence (and list line) of the instructions the engine sends in a memory update: both
/// system texts and the fixed lines of the user message. A summary sentence that repeats one is
/// dropped (`ground::drop_instruction_echo`).
pub fn instruction_sentences() -> Vec<String> {
    let fixed = [
        "PREVIOUS SUMMARY:",
        NO_PREVIOUS,
        "KNOWN ENTITIES (id | type | name | aliases) — reuse these ids:",
        "(none yet)",
        "NEW MESSAGES:",
        "Write the updated memory now.",
        "Write the memory of the new messages now.",
    ];
    let texts = [structured_instruction(), system_instruction()];
    let mut out: Vec<String> = fixed.iter().map(|s| s.to_string()).collect();
    for text in &texts {
        for line in text.lines() {
            out.push(line.to_string());
            out.extend(sentences(line).iter().map(|s| s.to_string()));
        }
    }
    out
}

/// The system instruction: what to do and the exact reply format.
pub fn system_instruction() -> String {
    format!(
        "{MEMORY_REQUEST_OPENING}\n\
You receive the previous summary, the entities already known, and the new messages.\n\
Reply with exactly these two sections, in this order, and nothing else (no code fences, no commentary):\n\
\n\
{CONVERSATION_MARKER}\n\
A concise narrative summary of the WHOLE conversation so far: the previous summary updated with the \
new messages. Keep decisions, facts, open questions and the user's goals and preferences.\n\
{ENTITY_MARKER}\n\
A JSON array of the entities that the new messages mention or change. Each element:\n\
{{\"id\": \"<known id, or a new short id>\", \"type\": \"person|place|concept|event|task|other\", \
\"name\": \"<name>\", \"aliases\": [\"<other names>\"], \"description\": \"<what we know>\", \
\"properties\": {{\"<key>\": \"<value>\"}}, \
\"relationships\": [{{\"targetId\": \"<id of another entity>\", \"relationship\": \"<verb phrase, e.g. works_at>\", \
\"strength\": 0.0-1.0}}]}}\n\
\n\
Rules:\n\
- Reuse the id of a known entity whenever the entity is already listed; never invent a new id for it.\n\
- Every targetId must be the id of a known entity or of an entity in your array.\n\
- To record that a relationship no longer holds, repeat it with \"strength\": 0.\n\
- Leave out entities that did not change. If nothing changed, write [] as the entity section.\n\
- Output valid JSON: double quotes, no comments, no trailing commas."
    )
}

fn role_label(role: Role) -> &'static str {
    match role {
        Role::System => "[SYSTEM]",
        Role::User => "[USER]",
        Role::Assistant => "[ASSISTANT]",
        Role::Tool => "[TOOL]",
    }
}

fn push_message(out: &mut String, m: &Message, max_chars: usize) {
    out.push_str(role_label(m.role));
    out.push_str(": ");
    let text = m.content.trim();
    let cut = truncate_chars(text, max_chars);
    out.push_str(cut);
    if cut.len() < text.len() {
        out.push_str(" [truncated]");
    }
    if !m.meta.tool_calls.is_empty() {
        let names: Vec<&str> = m.meta.tool_calls.iter().map(|t| t.name.as_str()).collect();
        out.push_str(&format!(" (called tools: {})", names.join(", ")));
    }
    // An image or a file is named, never carried: `[image: name]`.
    for a in &m.meta.attachments {
        out.push(' ');
        out.push_str(&crate::engine::attach::placeholder(a));
    }
    out.push_str("\n\n");
}

/// The messages an update after `after` takes (the counting ones, system messages left out, oldest
/// first, never past a reply still being written, until the transcript reaches
/// `limits.max_transcript_chars`; at least one), the span they make and their transcript. `None` when
/// there is no such message. The one selection both a live update ([`build_update_request`]) and a
/// catch-up plan (`catchup`) use, so a planned chunk is the update that runs.
pub(crate) fn select_span<'a>(
    messages: &'a [Message],
    after: Option<u64>,
    limits: &UpdateLimits,
) -> Option<(Vec<&'a Message>, UpdateSpan, String)> {
    // Never past a reply still being written (another tab's): it would never be summarised.
    let until = first_unsettled(messages, after).unwrap_or(u64::MAX);
    let mut new: Vec<&Message> = messages
        .iter()
        .filter(|m| {
            after.is_none_or(|s| m.seq > s)
                && m.seq < until
                && counts_for_memory(m)
                && m.role != Role::System
        })
        .collect();
    sort_by_key(&mut new, |m| m.seq);
    let first = new.first()?;
    let mut transcript = String::new();
    let mut span = UpdateSpan {
        from_seq: first.seq,
        to_seq: first.seq,
        message_ids: Vec::new(),
    };
    for m in &new {
        let before = transcript.len();
        push_message(&mut transcript, m, limits.max_message_chars.max(1));
        if !span.message_ids.is_empty() && transcript.len() > limits.max_transcript_chars {
            transcript.truncate(before);
            break;
        }
        span.to_seq = m.seq;
        span.message_ids.push(m.id.clone());
    }
    Some((new, span, transcript))
}

/// Builds the update request. Includes the counting messages (not errored, not streaming, not empty;
/// system messages left out) with `seq > covers_up_to_seq`, oldest first, within `limits`.
/// Errors with [`MemoryError::NothingToSummarize`] when there is no such message.
pub fn build_update_request(
    previous: Option<&ConversationSummary>,
    messages: &[Message],
    entities: &[EntityNode],
    limits: &UpdateLimits,
) -> Result<UpdateRequest, MemoryError> {
    let after = previous.map(|s| s.covers_up_to_seq);
    let (new, span, transcript) =
        select_span(messages, after, limits).ok_or(MemoryError::NothingToSummarize)?;
    let read = read_messages(
        &new,
        span.message_ids.len(),
        limits.max_message_chars.max(1),
    );
    let user_said: Vec<String> = read
        .iter()
        .filter(|m| m.role == Role::User)
        .map(|m| m.content.clone())
        .collect();
    let known = known_entities(entities, limits.max_entities);
    let entity_list = entity_list(&known);
    let new_messages = format!(
        "NEW MESSAGES (seq {} to {}):\n\n{}",
        span.from_seq,
        span.to_seq,
        transcript.trim_end()
    );
    // The two-section form: the seed's protocol, the previous summary rewritten by the model.
    let previous_text = previous
        .map(|s| s.text.trim())
        .filter(|t| !t.is_empty())
        .unwrap_or(NO_PREVIOUS);
    let user = format!(
        "PREVIOUS SUMMARY:\n{previous_text}\n\n{entity_list}\n{new_messages}\n\nWrite the updated memory now."
    );
    // The constrained forms: what the new messages add, without the previous summary, which the
    // engine carries forward itself (`summary::carry_forward`). Measured with SmolLM2-135M: given the
    // previous summary, it copied it and left the new facts out; without it, it wrote them.
    let structured_user =
        format!("{entity_list}\n{new_messages}\n\nWrite the memory of the new messages now.");
    let mut short = String::new();
    for m in new.iter().take(span.message_ids.len()) {
        if m.role == Role::User {
            push_message(&mut short, m, limits.max_message_chars.max(1));
        }
    }
    let continued_user = format!(
        "{entity_list}\nNEW MESSAGES (seq {} to {}) of the conversation above, the user's:\n\n{}\n\nWrite the memory of the new messages now.",
        span.from_seq,
        span.to_seq,
        short.trim_end()
    );
    Ok(UpdateRequest {
        read,
        known: known_names(&known),
        previous_text: previous.map(|p| p.text.clone()),
        prompt: Prompt {
            system: system_instruction(),
            messages: vec![WireMessage::text(Role::User, user)],
        },
        structured_user,
        continued_user,
        user_said,
        options: MemoryRequestOptions {
            temperature: MEMORY_TEMPERATURE,
            max_tokens: reply_tokens(transcript.len(), previous.map_or(0, |p| p.text.len())),
        },
        span,
    })
}

/// The first `count` of `new` as the request shows them: trimmed and cut at `max_chars`.
fn read_messages(new: &[&Message], count: usize, max_chars: usize) -> Vec<ReadMessage> {
    new.iter()
        .take(count)
        .map(|m| ReadMessage {
            id: m.id.clone(),
            role: m.role,
            content: truncate_chars(m.content.trim(), max_chars).to_string(),
            created_at: m.created_at,
        })
        .collect()
}

/// The known entities the request lists: the `max` most recently updated, by id.
fn known_entities(entities: &[EntityNode], max: usize) -> Vec<&EntityNode> {
    let mut known: Vec<&EntityNode> = entities.iter().collect();
    sort_by(&mut known, |a, b| {
        b.updated_at.cmp(&a.updated_at).then(a.id.cmp(&b.id))
    });
    known.truncate(max);
    sort_by(&mut known, |a, b| a.id.cmp(&b.id));
    known
}

/// The request's list of the `known` entities: id, type, name and aliases, one a line.
fn entity_list(known: &[&EntityNode]) -> String {
    let mut entity_list = String::new();
    entity_list.push_str("KNOWN ENTITIES (id | type | name | aliases) — reuse these ids:\n");
    if known.is_empty() {
        entity_list.push_str("(none yet)\n");
    }
    for e in known {
        entity_list.push_str(&format!(
            "- {} | {} | {}",
            one_line(&e.id),
            e.entity_type.as_str(),
            one_line(&e.name)
        ));
        if !e.aliases.is_empty() {
            let aliases: Vec<String> = e.aliases.iter().map(|a| one_line(a)).collect();
            entity_list.push_str(" | ");
            entity_list.push_str(&aliases.join(", "));
        }
        entity_list.push('\n');
    }
    entity_list
}

/// The ids and names (name first, then aliases) of the `known` entities.
fn known_names(known: &[&EntityNode]) -> Vec<KnownNames> {
    known
        .iter()
        .map(|e| KnownNames {
            id: e.id.clone(),
            names: std::iter::once(&e.name)
                .chain(&e.aliases)
                .cloned()
                .collect(),
        })
        .collect()
}
