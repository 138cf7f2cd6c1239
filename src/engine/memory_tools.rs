//! The built-in memory tools, the engine's part: what they are ([`defs`]: names, descriptions,
//! JSON schemas, [`ToolSource::Builtin`]), when a turn offers them ([`offered`]: where tools are on
//! and memory about the user may go into the conversation's prompts), which conversations they may
//! read ([`Reach::may_read`]: never one whose memory is off, never another project's; temporary
//! chats are never stored, so never found), what a call asks ([`parse_call`]) and what the model
//! reads back ([`search_text`], ranked as recall ranks, `memory::recall::rank`; [`read_text`], a
//! span of a conversation by seq, at most [`MAX_READ_MESSAGES`]; [`facts_text`], the facts about
//! the user a prompt of the conversation may carry, `memory::user::in_scope`).
//!
//! Why tools beside recall: recall quotes old conversations only when the new message refers back
//! to them ("last time…"), within a share of the budget; a tool lets the model look up what the
//! budget left out, when it judges it needs it, under the same switches.
//!
//! The session reads the store (the search index, a span of messages, the facts) and hands it
//! here. Must not import anything outside `crate::engine`.

use serde::Deserialize;

use crate::engine::memory::recall::{lookup_words, rank, Found};
use crate::engine::memory::user::in_scope;
use crate::engine::model::{Conversation, Message, MessageStatus, Project, Role, UserFact};
use crate::engine::project::prompt_scope;
use crate::engine::tools::{ToolDef, ToolSource};

/// Searches the user's other conversations.
pub const SEARCH: &str = "search_conversations";
/// Reads a span of one conversation.
pub const READ: &str = "read_conversation";
/// The facts about the user.
pub const FACTS: &str = "user_facts";
/// What the UI names as the server of a built-in tool.
pub const BUILTIN_SERVER: &str = "Memoire";
/// Most messages one [`READ`] call returns.
pub const MAX_READ_MESSAGES: u64 = 20;
/// Characters of one message a [`READ`] call shows (the rest cut with `…`).
pub const READ_MESSAGE_CHARS: usize = 2_000;

/// Whether a turn offers the memory tools: tools are on (`tools_on`), memory about the user is on
/// for the conversation (`user_memory`: Settings and the conversation's switch), its endpoint may
/// have it (`no_user_memory` off), and the chat is not temporary (nothing of it is remembered).
pub fn offered(tools_on: bool, user_memory: bool, no_user_memory: bool, temporary: bool) -> bool {
    tools_on && user_memory && !no_user_memory && !temporary
}

/// The three memory tools, as every request offers them.
pub fn defs() -> Vec<ToolDef> {
    let def = |name: &str, description: &str, parameters: &str| ToolDef {
        name: name.into(),
        description: description.into(),
        parameters: parameters.into(),
        source: ToolSource::Builtin,
    };
    vec![
        def(
            SEARCH,
            "Search the user's earlier conversations with you for words or a topic. Returns passages, each with its conversation id and message seq (for read_conversation).",
            r#"{"type":"object","properties":{"query":{"type":"string","description":"The words to look for"}},"required":["query"]}"#,
        ),
        def(
            READ,
            "Read messages of one of the user's conversations by its id, from one message seq to another (at most 20 messages).",
            r#"{"type":"object","properties":{"conversation_id":{"type":"string"},"from_seq":{"type":"integer"},"to_seq":{"type":"integer"}},"required":["conversation_id"]}"#,
        ),
        def(
            FACTS,
            "The facts the user told you about themselves (remembered across conversations).",
            r#"{"type":"object","properties":{}}"#,
        ),
    ]
}

/// What a memory tool call asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemoryCall {
    Search {
        query: String,
    },
    /// Messages of `conversation_id` with seq in `from..=to` ([`read_span`]).
    Read {
        conversation_id: String,
        from: u64,
        to: u64,
    },
    Facts,
}

#[derive(Deserialize)]
struct SearchArgs {
    query: String,
}

#[derive(Deserialize)]
struct ReadArgs {
    conversation_id: String,
    from_seq: Option<u64>,
    to_seq: Option<u64>,
}

/// The call of tool `name` with `arguments` (JSON text, as the model wrote it); `Err`: why it
/// cannot run, which the model reads as the failed call's result.
pub fn parse_call(name: &str, arguments: &str) -> Result<MemoryCall, String> {
    let args = if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    };
    let bad = |e: serde_json::Error| format!("the arguments of {name} are not valid: {e}");
    match name {
        SEARCH => {
            let a: SearchArgs = serde_json::from_str(args).map_err(bad)?;
            if a.query.trim().is_empty() {
                return Err("the query is empty.".into());
            }
            Ok(MemoryCall::Search { query: a.query })
        }
        READ => {
            let a: ReadArgs = serde_json::from_str(args).map_err(bad)?;
            let (from, to) = read_span(a.from_seq, a.to_seq);
            Ok(MemoryCall::Read {
                conversation_id: a.conversation_id,
                from,
                to,
            })
        }
        FACTS => Ok(MemoryCall::Facts),
        other => Err(format!("there is no memory tool named {other}.")),
    }
}

/// The seqs a read covers: from `from` (0 when not given) to `to`, at most
/// [`MAX_READ_MESSAGES`] of them (a `to` before `from` reads from `from`).
pub fn read_span(from: Option<u64>, to: Option<u64>) -> (u64, u64) {
    let from = from.unwrap_or(0);
    let last = from.saturating_add(MAX_READ_MESSAGES - 1);
    let to = to.filter(|t| *t >= from).map_or(last, |t| t.min(last));
    (from, to)
}

/// What the memory tools of a turn may read: the conversation the turn is in and its project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reach {
    pub here: String,
    /// The turn's conversation's project (`project::prompt_scope`); `None`: none.
    pub scope: Option<String>,
}

impl Reach {
    /// The reach of a turn in `here`.
    pub fn of(here: &Conversation, projects: &[Project]) -> Reach {
        Reach {
            here: here.id.clone(),
            scope: prompt_scope(here, projects).map(str::to_string),
        }
    }

    /// Whether the memory tools may read conversation `c`: its memory about the user is not off,
    /// and it is in no project or in the turn's own (what a prompt may carry of it).
    pub fn may_read(&self, c: &Conversation, projects: &[Project]) -> bool {
        let scope = prompt_scope(c, projects);
        c.memory_overrides.user_memory != Some(false)
            && (scope.is_none() || scope == self.scope.as_deref())
    }
}

/// The words a search looks up in the index (`memory::recall::lookup_words`).
pub fn search_words(query: &str) -> Vec<String> {
    lookup_words(query)
}

/// What the model reads for a search: the passages `found` by looking up `words`, ranked as recall
/// ranks (nothing of the turn's own conversation, of a `private` one, of a deleted or failed
/// message), each with its conversation's id and title, the message's seq and who said it.
pub fn search_text(found: Vec<Found>, words: &[String], reach: &Reach) -> String {
    let seqs: Vec<(String, u64)> = found
        .iter()
        .map(|f| (f.message.id.clone(), f.message.seq))
        .collect();
    let passages = rank(found, words, &reach.here);
    if passages.is_empty() {
        return "No earlier conversation mentions that.".into();
    }
    passages
        .iter()
        .map(|p| {
            let seq = seqs
                .iter()
                .find(|(id, _)| *id == p.message_id)
                .map_or(0, |(_, s)| *s);
            let who = if p.role == Role::User {
                "user"
            } else {
                "assistant"
            };
            let title = serde_json::to_string(&p.title).unwrap_or_default();
            format!(
                "conversation_id={} title={title} seq={seq} {who}: {}",
                p.conversation_id, p.text
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What the model reads for a read of `c` (its `messages` in the span, ascending): each message
/// that is not deleted, hidden or failed, with its seq and who said it, cut at
/// [`READ_MESSAGE_CHARS`]. `c` is `None` or out of reach: the call fails with a reason.
pub fn read_text(c: Option<&Conversation>, messages: &[Message]) -> Result<String, String> {
    let c = c.ok_or("there is no conversation with that id you may read.")?;
    let lines: Vec<String> = messages
        .iter()
        .filter(|m| m.conversation_id == c.id)
        .filter(|m| !m.meta.deleted && !m.meta.hidden && m.status != MessageStatus::Error)
        .map(|m| {
            let text: String = m.content.chars().take(READ_MESSAGE_CHARS).collect();
            let cut = if text.len() < m.content.len() {
                "…"
            } else {
                ""
            };
            format!("seq={} {}: {text}{cut}", m.seq, m.role.as_str())
        })
        .collect();
    let title = serde_json::to_string(&c.title).unwrap_or_default();
    if lines.is_empty() {
        return Ok(format!("Conversation {title}: no messages in that span."));
    }
    Ok(format!("Conversation {title}:\n{}", lines.join("\n")))
}

/// What the model reads for [`FACTS`]: every fact a prompt of `reach`'s conversation may carry
/// (`memory::user::in_scope`), one a line.
pub fn facts_text(facts: &[UserFact], reach: &Reach) -> String {
    let lines: Vec<String> = facts
        .iter()
        .filter(|f| in_scope(f, reach.scope.as_deref()))
        .map(|f| format!("- {}", f.text))
        .collect();
    if lines.is_empty() {
        return "No fact about the user is remembered.".into();
    }
    lines.join("\n")
}
