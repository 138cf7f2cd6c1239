//! The context preview: what the next request will contain (the same assembly a send makes,
//! without sending), for the context inspector. Must not import `ui`.

use super::service::{Chat, ChatError};
use super::turn::Context;
use crate::engine::assemble::{DropReason, SectionKind};
use crate::engine::format::{date, path_explanation, plural, system_prompt_detail};
use crate::engine::model::{
    Conversation, EntityScope, HistoryFormat, MemoryOverrides, Message, MessageStatus, Role,
    TurnPath,
};
use crate::engine::turn::path_for;
use crate::session::shared::cache::MemoryParts;
use crate::session::shared::error::Boxed;
use crate::session::shared::now;

/// One row of the context inspector.
#[derive(Debug, Clone, PartialEq)]
pub struct PreviewSection {
    pub key: String,
    pub label: String,
    pub detail: String,
    pub tokens: u32,
}

/// Where something the next request carries from the user's memory across conversations came
/// from: a fact about the user (section `user-facts`) or a passage of another conversation
/// (`recall`).
#[derive(Debug, Clone, PartialEq)]
pub struct PreviewSource {
    /// The section's key.
    pub section: String,
    /// The fact, or the passage, as carried.
    pub text: String,
    /// The day it was said (`YYYY-MM-DD`).
    pub said: String,
    /// Where it was said (`None`: a fact the user added by hand).
    pub conversation_id: Option<String>,
    pub message_id: Option<String>,
    /// The conversation's title, when the prompt names it (a passage's).
    pub title: Option<String>,
}

/// A message the next request leaves out.
#[derive(Debug, Clone, PartialEq)]
pub struct PreviewDropped {
    pub seq: u64,
    pub reason: String,
}

/// What the next request will contain.
#[derive(Debug, Clone, PartialEq)]
pub struct Preview {
    pub path: TurnPath,
    pub path_explanation: String,
    pub format: String,
    pub protocol: String,
    pub sections: Vec<PreviewSection>,
    /// Where each fact about the user and each passage of another conversation came from.
    pub sources: Vec<PreviewSource>,
    pub dropped: Vec<PreviewDropped>,
    pub total_tokens: u32,
    pub budget: u32,
    pub over_budget: bool,
    pub request_bytes: usize,
    /// The reply cap the request carries (`engine::request::reply_cap`), in tokens.
    pub reply_cap: u32,
    /// How many tokens the server said its context holds, when it said (the budget is fitted to
    /// it when Settings say more: `engine::context_window`).
    pub server_window: Option<u32>,
}

impl Chat {
    /// What the first message of a new chat (no conversation stored yet, `overrides`: what was
    /// picked for it) would send: the system prompt, the shared memory and the message.
    async fn preview_new_chat(
        &self,
        draft: Message,
        overrides: MemoryOverrides,
    ) -> Result<Preview, ChatError> {
        let t = now();
        let conversation = Conversation {
            id: String::new(),
            title: String::new(),
            title_is_custom: false,
            created_at: t,
            updated_at: t,
            message_count: 0,
            endpoint_profile_id: None,
            remote_handle: None,
            last_path: None,
            memory_overrides: overrides,
        };
        let config = self.core.config_for(&conversation);
        let memory = MemoryParts {
            summary: None,
            entities: self.core.store.load_entities(&EntityScope::Shared).await?,
        };
        let about = self.about_user(&conversation, &config, &draft).await?;
        let ctx =
            self.assemble_context(conversation, Vec::new(), config, &draft, (&memory, &about));
        Ok(preview_of(&ctx, TurnPath::Fresh))
    }

    /// What the next request of conversation `id` (empty: the new chat, with `overrides`) will
    /// contain, with `draft` as its message. Behind split point `turn` (the assembly is the turn's).
    pub async fn preview(
        &self,
        id: &str,
        draft: &str,
        overrides: MemoryOverrides,
    ) -> Result<Preview, ChatError> {
        preview_split(self, id, draft, overrides).await
    }

    async fn preview_now(
        &self,
        id: &str,
        draft: &str,
        overrides: MemoryOverrides,
    ) -> Result<Preview, ChatError> {
        let draft_msg = Message {
            id: "draft".into(),
            conversation_id: id.to_string(),
            seq: u64::MAX,
            role: Role::User,
            content: draft.to_string(),
            status: MessageStatus::Complete,
            created_at: now(),
            meta: Default::default(),
        };
        if id.is_empty() {
            return self.preview_new_chat(draft_msg, overrides).await;
        }
        let ctx = if self.is_temporary(id) {
            self.temporary_context(id, &draft_msg).await?
        } else {
            self.context_for(id, &draft_msg, false).await?
        };
        let path = path_for(
            ctx.conversation.remote_handle.as_ref(),
            &ctx.endpoint,
            &ctx.assembly,
        );
        Ok(preview_of(&ctx, path))
    }
}

/// Split point `turn` (see `turn.rs`): the preview assembles the prompt as a send does.
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(turn, fallible, return_wrapper(let future = _; { future.await } -> Result<Preview, ChatError>)))]
fn preview_split<'a>(
    chat: &'a Chat,
    id: &'a str,
    draft: &'a str,
    overrides: MemoryOverrides,
) -> Boxed<'a, Preview, ChatError> {
    Box::pin(chat.preview_now(id, draft, overrides))
}

/// A message the request leaves out, and why in words.
fn dropped_of(d: &crate::engine::assemble::Dropped) -> PreviewDropped {
    let reason = match d.reason {
        DropReason::CoveredBySummary => "covered by the summary",
        DropReason::OverBudget => "no room in the token budget",
        DropReason::ByteCap => "no room under the request size cap",
        DropReason::Errored => "a failed reply",
        DropReason::Empty => "empty",
        DropReason::AfterNewMessage => "a reply to an earlier attempt at this message",
        DropReason::Unanswered => "a question whose reply failed, followed by another",
        DropReason::Hidden => "hidden from the model where it was imported from",
    };
    PreviewDropped {
        seq: d.seq,
        reason: reason.to_string(),
    }
}

fn preview_of(ctx: &Context, path: TurnPath) -> Preview {
    let a = &ctx.assembly;
    let path_explanation = path_explanation(path).to_string();
    // The images the history carries and those of the new message (the last message).
    let (older, newest) = a
        .prompt
        .messages
        .split_at(a.prompt.messages.len().saturating_sub(1));
    let note = |ms: &[crate::engine::model::WireMessage]| {
        let images: Vec<_> = ms.iter().flat_map(|m| m.images.iter()).collect();
        crate::engine::attach::images_note(ctx.endpoint.protocol, &images)
    };
    let with_note = |detail: String, note: String| match (detail.is_empty(), note.is_empty()) {
        (_, true) => detail,
        (true, false) => note,
        (false, false) => format!("{detail}; {note}"),
    };
    let sections = a
        .sections
        .iter()
        .map(|s| {
            let detail = match s.kind {
                SectionKind::History => with_note(
                    plural(s.message_ids.len(), "message", "messages"),
                    note(older),
                ),
                SectionKind::NewMessage => with_note(String::new(), note(newest)),
                SectionKind::Entities => plural(s.entity_ids.len(), "entity", "entities"),
                SectionKind::System => {
                    system_prompt_detail(&ctx.conversation, ctx.project.as_ref(), &s.text)
                }
                SectionKind::Summary if a.summary_shortened => "shortened to fit".into(),
                SectionKind::UserFacts => a.user_facts_detail(),
                SectionKind::Recall => a.recall_detail.clone(),
                _ => String::new(),
            };
            PreviewSection {
                key: s.kind.key().into(),
                label: s.kind.label().into(),
                detail,
                tokens: s.tokens,
            }
        })
        .collect();
    let dropped = a.dropped.iter().map(dropped_of).collect();
    Preview {
        sources: sources_of(ctx),
        path,
        path_explanation,
        format: match ctx.config.history_format {
            HistoryFormat::Transcript => "transcript".into(),
            HistoryFormat::Messages => "messages".into(),
        },
        protocol: ctx.endpoint.protocol.as_str().into(),
        sections,
        dropped,
        total_tokens: a.total_tokens,
        budget: a.budget_tokens,
        over_budget: a.over_budget,
        request_bytes: a.total_bytes,
        reply_cap: crate::engine::request::reply_cap(&ctx.config),
        server_window: ctx.server_window,
    }
}

/// Where the facts about the user and the passages the prompt carries came from, in prompt order.
fn sources_of(ctx: &Context) -> Vec<PreviewSource> {
    let a = &ctx.assembly;
    let facts = a.carried_facts(&ctx.about.facts).into_iter().map(|f| {
        let source = f.source.as_ref();
        PreviewSource {
            section: SectionKind::UserFacts.key().into(),
            text: f.text.clone(),
            said: date(source.map_or(f.valid_from, |s| s.said_at)),
            conversation_id: source.map(|s| s.conversation_id.clone()),
            message_id: source.map(|s| s.message_id.clone()),
            title: None,
        }
    });
    let passages = a
        .carried_passages(&ctx.about.recall)
        .into_iter()
        .map(|p| PreviewSource {
            section: SectionKind::Recall.key().into(),
            text: p.text.clone(),
            said: date(p.said_at),
            conversation_id: Some(p.conversation_id.clone()),
            message_id: Some(p.message_id.clone()),
            title: Some(p.title.clone()),
        });
    facts.chain(passages).collect()
}
