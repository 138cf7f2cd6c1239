//! Facts about the user, across conversations: taken in from what the user says (each stored user
//! message, when "Remember me across conversations" is on), from what a memory update's model
//! proposed when the user's words hold it, and the Memory page's reads and edits
//! (forget, edit, add). Which sentences are facts, what a new one makes past and what forgetting
//! means are the engine's (`engine::memory::user`). Every change runs under one Web Lock for every
//! tab, reading the facts from the store inside it, so two messages (or two tabs) never write over
//! each other's facts. A change runs behind split point `memory` (the extraction rules are in the
//! memory chunk, not in what the first screen loads; the prompt's choice of facts stays in the
//! main wasm), and the read of every fact behind split point `memory_read`. Must not import `ui`.

use super::service::{Memory, MemoryError};
use crate::engine::memory::parse::Proposals;
use crate::engine::memory::prompt::ReadMessage;
use crate::engine::memory::proposed::{self, Said};
use crate::engine::memory::user;
use crate::engine::model::{Conversation, MemoryConfig, Message, Millis, Role, UserFact};
use crate::engine::project;
use crate::engine::tabs::Change;
use crate::session::shared::error::Boxed;
use crate::session::shared::{new_id, now, tabs};
use std::collections::HashMap;

impl Memory {
    /// Takes in what the user said in `m` (a stored user message), when memory about the user is
    /// on for its conversation.
    pub(crate) async fn user_said(&self, m: &Message) -> Result<(), MemoryError> {
        let conversation = self.core.conversation(&m.conversation_id).await?;
        if !self.core.config_for(&conversation).user_memory {
            return Ok(());
        }
        let scope = self.scope_of(&conversation).await?;
        self.change_facts(FactChange::Said(m.clone(), scope))
            .await
            .map(|_| ())
    }

    /// The scope of the facts said in `conversation`: its project (a fact learned in a project
    /// stays in it, `engine::project::fact_scope`), or `None`.
    async fn scope_of(&self, conversation: &Conversation) -> Result<Option<String>, MemoryError> {
        if conversation.memory_overrides.project.is_none() {
            return Ok(None);
        }
        let projects = self.core.store.load_projects().await?;
        Ok(project::fact_scope(conversation, &projects))
    }

    /// Makes a project's fact one about the user: every conversation's prompts may carry it.
    pub async fn move_fact_to_about_you(&self, id: &str) -> Result<(), MemoryError> {
        self.change_facts(FactChange::ToAboutYou(id.to_string()))
            .await?;
        Ok(())
    }

    /// Takes in what the user said in a memory update's span, when memory about the user is on
    /// for its conversation (`config`).
    pub(crate) async fn user_span(
        &self,
        messages: &[Message],
        config: &MemoryConfig,
    ) -> Result<(), MemoryError> {
        if !config.user_memory {
            return Ok(());
        }
        let scope = match messages.first() {
            Some(m) => {
                let conversation = self.core.conversation(&m.conversation_id).await?;
                self.scope_of(&conversation).await?
            }
            None => None,
        };
        self.change_facts(FactChange::Span(messages.to_vec(), scope))
            .await
            .map(|_| ())
    }

    /// Takes in the facts about the user the memory model proposed for a span of conversation
    /// `conversation_id` (`read`: the messages the update showed it), when memory about the user
    /// is on (`config`): those the user's own words hold (`engine::memory::proposed`).
    pub(crate) async fn user_proposed(
        &self,
        conversation_id: &str,
        read: &[ReadMessage],
        proposals: &Proposals,
        config: &MemoryConfig,
    ) -> Result<(), MemoryError> {
        if !config.user_memory || proposals.is_empty() {
            return Ok(());
        }
        let conversation = self.core.conversation(conversation_id).await?;
        let scope = self.scope_of(&conversation).await?;
        let said = read
            .iter()
            .filter(|m| m.role == Role::User)
            .map(|m| (m.id.clone(), m.content.clone(), m.created_at))
            .collect();
        let change = FactChange::Proposed {
            conversation_id: conversation_id.to_string(),
            said,
            proposals: proposals.clone(),
            scope,
        };
        self.change_facts(change).await.map(|_| ())
    }

    /// Every fact about the user (current, past and forgotten), for the Memory page and the memory
    /// pane (behind split point `memory_read`, as the pane's read of a conversation's memory).
    pub async fn user_facts(&self) -> Result<Vec<UserFact>, MemoryError> {
        user_facts_split(self).await
    }

    async fn user_facts_now(&self) -> Result<Vec<UserFact>, MemoryError> {
        Ok(self.core.user_facts().await?.to_vec())
    }

    /// Forgets a fact: it leaves every prompt and every synced device, and the same sentence from
    /// the same message is not taken in again.
    pub async fn forget_fact(&self, id: &str) -> Result<(), MemoryError> {
        self.change_facts(FactChange::Forget(id.to_string()))
            .await?;
        Ok(())
    }

    /// Replaces a fact's text with the user's words.
    pub async fn edit_fact(&self, id: &str, text: &str) -> Result<(), MemoryError> {
        let change = FactChange::Edit(id.to_string(), text.to_string());
        self.change_facts(change).await?;
        Ok(())
    }

    /// Adds a fact the user wrote ("Remember that I …"); an empty one, or one already current, is
    /// said so.
    pub async fn add_fact(&self, text: &str) -> Result<(), MemoryError> {
        let added = self.change_facts(FactChange::Add(text.to_string())).await?;
        if !added {
            return Err(MemoryError::Invalid(
                "Nothing to add: write a sentence about you that is not there yet.".into(),
            ));
        }
        Ok(())
    }

    /// Applies `change` to the facts as stored (under the lock), writes the ones it changed and
    /// reports it; returns whether anything changed.
    async fn change_facts(&self, change: FactChange) -> Result<bool, MemoryError> {
        change_facts_split(self, change).await
    }

    async fn change_facts_now(&self, change: FactChange) -> Result<bool, MemoryError> {
        let store = &self.core.store;
        let _lock = tabs::lock_user_facts(store.name()).await;
        let mut facts = store.load_user_facts().await?;
        let before: HashMap<String, UserFact> =
            facts.iter().map(|f| (f.id.clone(), f.clone())).collect();
        if !change.apply(&mut facts) {
            return Ok(false);
        }
        let changed: Vec<&UserFact> = facts
            .iter()
            .filter(|f| before.get(&f.id) != Some(*f))
            .collect();
        store.save_user_facts(&changed).await?;
        self.core.emit(Change::UserFacts);
        Ok(true)
    }
}

/// A change of the facts about the user.
enum FactChange {
    /// The user said this (a stored user message), in a conversation of this project (`None`:
    /// of none).
    Said(Message, Option<String>),
    /// A memory update's span, of a conversation of this project.
    Span(Vec<Message>, Option<String>),
    /// What the memory model proposed for a span of a conversation (of this project): the user
    /// messages it read (id, text, when) and its proposals.
    Proposed {
        conversation_id: String,
        said: Vec<(String, String, Millis)>,
        proposals: Proposals,
        scope: Option<String>,
    },
    /// A project's fact becomes one about the user.
    ToAboutYou(String),
    Forget(String),
    /// A fact's id and the user's words for it.
    Edit(String, String),
    Add(String),
}

impl FactChange {
    /// Applies the change (the engine's rules); true when anything changed.
    fn apply(self, facts: &mut Vec<UserFact>) -> bool {
        let at = now();
        match self {
            FactChange::Said(m, scope) => user::handle_said_in(
                facts,
                scope.as_deref(),
                &m.conversation_id,
                &m.id,
                &m.content,
                m.created_at,
                || new_id("f"),
            ),
            FactChange::Span(messages, scope) => {
                user::handle_messages_in(facts, scope.as_deref(), &messages, || new_id("f"))
            }
            FactChange::Proposed {
                conversation_id,
                said,
                proposals,
                scope,
            } => {
                let said: Vec<Said> = said
                    .iter()
                    .map(|(id, text, at)| Said {
                        message_id: id,
                        text,
                        at: *at,
                    })
                    .collect();
                let (scope, c) = (scope.as_deref(), conversation_id.as_str());
                proposed::handle_proposed_in(facts, scope, c, &said, &proposals, || new_id("f"))
            }
            FactChange::ToAboutYou(id) => project::move_to_about_you(facts, &id, at),
            FactChange::Forget(id) => user::forget(facts, &id, at),
            FactChange::Edit(id, text) => user::edit(facts, &id, &text, at),
            FactChange::Add(text) => user::add(facts, &text, at, new_id("f")),
        }
    }
}

/// Split point `memory_read` (`edits.rs`): reading every fact about the user.
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(memory_read, fallible, return_wrapper(let future = _; { future.await } -> Result<Vec<UserFact>, MemoryError>)))]
fn user_facts_split(memory: &Memory) -> Boxed<'_, Vec<UserFact>, MemoryError> {
    Box::pin(memory.user_facts_now())
}

/// Split point `memory`: a change of the facts (the extraction and supersession rules it runs).
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(memory, fallible, return_wrapper(let future = _; { future.await } -> Result<bool, MemoryError>)))]
fn change_facts_split(memory: &Memory, change: FactChange) -> Boxed<'_, bool, MemoryError> {
    Box::pin(memory.change_facts_now(change))
}
