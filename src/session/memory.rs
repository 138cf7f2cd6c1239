//! Running the memory update (summary + entity graph) and the memory pane's edits. When an update is
//! due, what it sends, how the reply is parsed and merged are the engine's (`engine::memory`); this
//! file loads, sends, and stores the result in one transaction. A failed update never touches the
//! stored memory. Must not import `ui`.

use super::{new_id, now, transport_failure, MemorySnapshot, Session, SessionError, SessionEvent};
use crate::engine::decode::{decoder_for, StreamEvent};
use crate::engine::failure::{self, Failure};
use crate::engine::memory::{
    apply_update, build_update_request, due, parse_reply, restore_summary, DueInput, Graph,
    MemoryError, UpdateLimits,
};
use crate::engine::model::{EndpointProfile, EntityNode, EntityScope, Prompt};
use crate::engine::request::{self, RequestOptions};
use crate::transport::{self, Stopper, Timeouts, TransportError};
use std::rc::Rc;

/// Most messages looked at when deciding whether an update is due.
const DUE_WINDOW: usize = 400;

impl Session {
    /// Runs the memory update when the engine says it is due (or always, with `force`). Serial per
    /// conversation; reports failures as notices and never changes memory on failure.
    pub(crate) async fn update_memory_if_due(
        self: &Rc<Self>,
        id: &str,
        overflow: bool,
        force: bool,
    ) {
        if self.memory_running.borrow().contains(id) {
            return;
        }
        match self.update_memory(id, overflow, force).await {
            Ok(_) => {}
            Err(e) => self.emit(SessionEvent::Error {
                conversation_id: Some(id.to_string()),
                message: format!("Memory update failed; the previous memory is kept. {e}"),
            }),
        }
    }

    /// The "Update memory now" button.
    pub async fn update_memory_now(self: &Rc<Self>, id: &str) -> Result<(), SessionError> {
        if self.memory_running.borrow().contains(id) {
            return Err(SessionError::Invalid(
                "The memory is already being updated.".into(),
            ));
        }
        self.update_memory(id, false, true).await.map(|_| ())
    }

    /// Returns whether an update ran. One tab at a time updates a conversation's memory (a Web
    /// Lock): a tab that waited re-reads everything, so it does not repeat the update another tab
    /// just made (a forced update is skipped when a new summary arrived while it waited).
    async fn update_memory(
        &self,
        id: &str,
        overflow: bool,
        force: bool,
    ) -> Result<bool, SessionError> {
        let seen = self.store.latest_summary(id).await?.map(|s| s.version);
        let _lock = super::sync::lock(&format!("memoire-memory:{}:{id}", self.store.name())).await;
        if force && self.store.latest_summary(id).await?.map(|s| s.version) != seen {
            return Ok(false);
        }
        let conv = self
            .store
            .get_conversation(id)
            .await?
            .ok_or(SessionError::NoConversation)?;
        let config = self.config_for(&conv);
        let previous = self.store.latest_summary(id).await?;
        let covers = previous.as_ref().map(|s| s.covers_up_to_seq);
        let messages = match covers {
            Some(seq) => self.store.load_since(id, seq).await?,
            None => self.store.load_last(id, DUE_WINDOW).await?,
        };
        let decision = due(DueInput {
            messages: &messages,
            covers_up_to_seq: covers,
            every_pairs: config.summary_every_pairs,
            over_budget: overflow,
            in_progress: self.memory_running.borrow().contains(id),
        });
        if !force && !decision.is_due() {
            return Ok(false);
        }
        if !self.settings.borrow().has_endpoint() {
            return Err(SessionError::NoEndpoint);
        }
        self.memory_running.borrow_mut().insert(id.to_string());
        self.emit(SessionEvent::MemoryUpdating {
            conversation_id: id.to_string(),
            running: true,
        });
        let result = self
            .run_update(id, &conv.message_count, previous, &messages, &config)
            .await;
        self.memory_running.borrow_mut().remove(id);
        self.emit(SessionEvent::MemoryUpdating {
            conversation_id: id.to_string(),
            running: false,
        });
        result.map(|_| true)
    }

    async fn run_update(
        &self,
        id: &str,
        message_count: &u64,
        previous: Option<crate::engine::model::ConversationSummary>,
        messages: &[crate::engine::model::Message],
        config: &crate::engine::model::MemoryConfig,
    ) -> Result<(), SessionError> {
        let scope = EntityScope::Conversation(id.to_string());
        let existing = self.store.load_entities(&scope).await?;
        let req = build_update_request(
            previous.as_ref(),
            messages,
            &existing,
            &UpdateLimits::from_config(config),
        )
        .map_err(memory_error)?;
        let endpoint = self.settings.borrow().endpoint.clone();
        let reply = complete(
            &endpoint,
            &req.prompt,
            req.options.temperature,
            req.options.max_tokens,
        )
        .await
        .map_err(|f| SessionError::Request(f.message))?;
        let parsed = parse_reply(&reply).map_err(memory_error)?;
        let mut graph = Graph::new(existing);
        let applied = apply_update(
            &parsed,
            previous.as_ref(),
            id,
            &req.span,
            *message_count,
            &mut graph,
            scope.clone(),
            now(),
            || new_id("e"),
        );
        self.store
            .save_memory(applied.summary.as_ref(), &scope, graph.nodes())
            .await?;
        self.emit(SessionEvent::MemoryChanged(id.to_string()));
        Ok(())
    }

    /// Every summary version (oldest first) and the entities of a conversation.
    pub async fn memory(&self, id: &str) -> Result<MemorySnapshot, SessionError> {
        let mut versions = self.store.load_summaries(id).await?;
        crate::engine::sort::sort_by_key(&mut versions, |s| s.version);
        Ok(MemorySnapshot {
            versions,
            entities: self.entities_for(id).await?,
        })
    }

    /// Makes an older summary version current again (as a new version; history is kept).
    pub async fn restore_summary(&self, id: &str, version: u32) -> Result<(), SessionError> {
        let versions = self.store.load_summaries(id).await?;
        let older = versions
            .iter()
            .find(|s| s.version == version)
            .ok_or_else(|| {
                SessionError::Invalid(format!("Summary version {version} does not exist."))
            })?;
        let latest = versions
            .iter()
            .max_by_key(|s| s.version)
            .ok_or_else(|| SessionError::Invalid("There is no summary to restore.".into()))?;
        let restored = restore_summary(latest, older, now()).map_err(memory_error)?;
        self.store.save_summary(&restored).await?;
        self.emit(SessionEvent::MemoryChanged(id.to_string()));
        Ok(())
    }

    /// Saves a user's edit of an entity.
    pub async fn save_entity(&self, id: &str, mut node: EntityNode) -> Result<(), SessionError> {
        node.updated_at = now();
        let scope = node.scope.clone();
        let mut nodes = self.store.load_entities(&scope).await?;
        match nodes.iter_mut().find(|n| n.id == node.id) {
            Some(n) => *n = node,
            None => nodes.push(node),
        }
        self.store.save_entities(&scope, &nodes).await?;
        self.emit(SessionEvent::MemoryChanged(id.to_string()));
        Ok(())
    }

    /// Deletes an entity and the relationships that point at it.
    pub async fn delete_entity(&self, id: &str, entity_id: &str) -> Result<(), SessionError> {
        for scope in [
            EntityScope::Conversation(id.to_string()),
            EntityScope::Shared,
        ] {
            let mut nodes = self.store.load_entities(&scope).await?;
            let before = nodes.len();
            nodes.retain(|n| n.id != entity_id);
            let mut touched = nodes.len() != before;
            for n in nodes.iter_mut() {
                let had = n.relationships.len();
                n.relationships.retain(|r| r.target_id != entity_id);
                touched |= n.relationships.len() != had;
            }
            if touched {
                self.store.save_entities(&scope, &nodes).await?;
            }
        }
        self.emit(SessionEvent::MemoryChanged(id.to_string()));
        Ok(())
    }
}

fn memory_error(e: MemoryError) -> SessionError {
    SessionError::Invalid(e.to_string())
}

/// Sends a one-off request and collects the whole reply text (used for memory updates).
pub(crate) async fn complete(
    endpoint: &EndpointProfile,
    prompt: &Prompt,
    temperature: f32,
    max_tokens: u32,
) -> Result<String, Failure> {
    let req = request::build(
        endpoint,
        prompt,
        &RequestOptions {
            temperature: Some(temperature),
            max_tokens: Some(max_tokens),
            previous_response_id: None,
            stream: true,
        },
    );
    let stopper = Stopper::new();
    let mut body = transport::open(&req, &stopper, Timeouts::default())
        .await
        .map_err(|e| transport_failure(e, &endpoint.base_url, false))?;
    let mut decoder = decoder_for(endpoint.protocol);
    let mut text = String::new();
    loop {
        let mut ended = false;
        match body.next_chunk().await {
            Ok(Some(bytes)) => decoder.handle_bytes(&bytes),
            Ok(None) => {
                decoder.handle_eof();
                ended = true;
            }
            Err(TransportError::Aborted) => return Err(failure::aborted()),
            Err(e) => return Err(transport_failure(e, &endpoint.base_url, false)),
        }
        while let Some(ev) = decoder.poll_event() {
            match ev {
                StreamEvent::TextDelta(t) => text.push_str(&t),
                StreamEvent::Done { .. } => return Ok(text),
                StreamEvent::Error(e) => return Err(failure::from_stream_error(&e, false)),
                _ => {}
            }
        }
        if ended {
            return Err(failure::from_stream_error(
                &crate::engine::decode::StreamError {
                    code: None,
                    message: "the reply ended without its end marker".into(),
                },
                false,
            ));
        }
    }
}
