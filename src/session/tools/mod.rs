//! The tools service ([`Tools`], `Session::tools`): which tools a turn offers (the built-in memory
//! tools, `engine::memory_tools`, and the MCP servers' through `session::mcp::McpTools`), running
//! one call (a built-in here, over the store: the search index, a span of messages, the facts about
//! the user; an MCP one through `McpTools::call`), the user's answer to a call waiting for approval
//! (Allow, Deny, "Always allow this tool", kept in the settings store beside the settings record:
//! `engine::tools::ToolPrefs`), and Stop reaching a call that waits or runs (through the turn's
//! `Stopper`). Every decision is the engine's (`engine::tools`, `engine::memory_tools`);
//! the chat's turn driver runs the loop (`session/chat/rounds.rs`). Must not import `ui`.

use crate::engine::memory::recall::Found;
use crate::engine::memory_tools::{self, MemoryCall, Reach};
use crate::engine::model::{Conversation, EndpointProfile, MemoryConfig, Message, Project};
use crate::engine::tools::{always_key, Approval, ToolDef, ToolPrefs, ToolSource, PREFS_KEY};
use crate::session::mcp::McpTools;
use crate::session::shared::held::Held;
use crate::session::shared::Core;
use crate::store::StoreError;
use crate::transport::Stopper;
use std::rc::Rc;
use wasm_bindgen::prelude::{Closure, JsValue};
use wasm_bindgen::JsCast;

/// Most records the search index gives per looked-up word.
const LOOKUP_LIMIT: usize = 200;

/// What went wrong keeping the user's choice.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ToolsError {
    #[error("Could not remember \"Always allow\" for this tool: {0}. It was allowed this once.")]
    Store(#[from] StoreError),
}

/// A call waiting for the user's answer.
struct Waiting {
    call_id: String,
    /// Resolves the driver's wait with the answer ([`code`]).
    resolve: js_sys::Function,
}

/// What the service remembers between awaits.
#[derive(Default)]
struct Calls {
    waiting: Vec<Waiting>,
    /// Answers given before their call was asked for (the calls of one round are shown together).
    early: Vec<(String, Approval)>,
}

/// The tools, their calls and the user's answers.
pub struct Tools {
    core: Rc<Core>,
    mcp: McpTools,
    calls: Held<Calls>,
}

/// A read that failed, as the model reads it.
fn unread(e: impl std::fmt::Display) -> String {
    format!("the memory could not be read: {e}")
}

/// An answer as the wait's promise carries it.
fn code(a: Approval) -> f64 {
    match a {
        Approval::Allow => 0.0,
        Approval::Deny => 1.0,
        Approval::Always => 2.0,
        Approval::Stop => 3.0,
    }
}

fn approval(v: f64) -> Approval {
    [Approval::Allow, Approval::Deny, Approval::Always]
        .into_iter()
        .find(|a| code(*a) == v)
        .unwrap_or(Approval::Stop)
}

impl Tools {
    pub(crate) fn new(core: Rc<Core>) -> Tools {
        Tools {
            mcp: McpTools::new(core.clone()),
            core,
            calls: Held::default(),
        }
    }

    /// The user's answer to call `call_id` (the tool call's Allow, Deny or Always allow). An answer
    /// to a call no turn of this tab waits for changes nothing.
    pub fn answer(&self, call_id: &str, answer: Approval) {
        let found =
            self.calls.with(
                |c| match c.waiting.iter().position(|w| w.call_id == call_id) {
                    Some(i) => Some(c.waiting.remove(i).resolve),
                    None => {
                        c.early.retain(|(id, _)| id != call_id);
                        c.early.push((call_id.to_string(), answer));
                        None
                    }
                },
            );
        if let Some(resolve) = found {
            resolve.call1(&JsValue::NULL, &code(answer).into()).ok();
        }
    }

    /// Waits for the user's answer to call `call_id` (one given already is
    /// taken at once); Stop (`stopper`) answers [`Approval::Stop`].
    pub(crate) async fn ask(&self, call_id: &str, stopper: &Stopper) -> Approval {
        if let Some(a) = self.calls.with(|c| {
            let i = c.early.iter().position(|(x, _)| x == call_id)?;
            Some(c.early.remove(i).1)
        }) {
            return a;
        }
        if stopper.is_stopped() {
            return Approval::Stop;
        }
        let mut resolve = None;
        let promise = js_sys::Promise::new(&mut |r, _| resolve = Some(r));
        let Some(resolve) = resolve else {
            return Approval::Stop;
        };
        // Stop resolves the wait too (with the abort event, which is no answer: Stop).
        stopper.on_stop(&resolve);
        self.calls.with(|c| {
            c.waiting.push(Waiting {
                call_id: call_id.to_string(),
                resolve,
            })
        });
        let v = wasm_bindgen_futures::JsFuture::from(promise).await;
        self.calls
            .with(|c| c.waiting.retain(|w| w.call_id != call_id));
        approval(v.ok().and_then(|v| v.as_f64()).unwrap_or(-1.0))
    }

    /// Cancels running call `call_id` (the loop's `Cancel`).
    pub(crate) fn cancel(&self, call_id: &str) {
        self.mcp.cancel(call_id);
    }

    /// The user's choices about tools (`engine::tools::ToolPrefs`), as stored; none stored (or
    /// unreadable): the defaults.
    pub(crate) async fn prefs(&self) -> ToolPrefs {
        let stored = self.core.store.get_setting(PREFS_KEY).await.ok().flatten();
        stored
            .and_then(|v| serde_json::from_value(v).ok())
            .unwrap_or_default()
    }

    /// The tools a turn of `conversation` offers: none with tools off (`prefs`); the memory tools
    /// where `engine::memory_tools::offered` says (memory about the user on for it, its endpoint
    /// allowed it, not a temporary chat); then the MCP servers' tools.
    pub(crate) async fn defs_for(
        &self,
        conversation: &Conversation,
        config: &MemoryConfig,
        temporary: bool,
        prefs: &ToolPrefs,
    ) -> Vec<ToolDef> {
        let endpoint =
            (self.core.settings.borrow()).chat_endpoint_for(&conversation.memory_overrides);
        let off = !prefs.offers_tools(&endpoint.key(), &endpoint.model);
        let private = endpoint.no_user_memory;
        let mut defs = Vec::new();
        if memory_tools::offered(!off, config.user_memory, private, temporary) {
            defs = memory_tools::defs();
        }
        if !off {
            defs.extend(self.mcp.defs().await);
        }
        defs
    }

    /// `endpoint`'s model refused tools (`engine::tools::tools_refused`): kept in the settings
    /// store, so no turn offers it tools again (`defs_for`), in every tab.
    pub(crate) async fn refuse(&self, endpoint: &EndpointProfile) -> Result<(), ToolsError> {
        let mut prefs = self.prefs().await;
        if !prefs.refuse(&endpoint.key(), &endpoint.model) {
            return Ok(());
        }
        let v = serde_json::to_value(&prefs).unwrap_or_default();
        self.core.store.set_setting(PREFS_KEY, &v).await?;
        Ok(())
    }

    /// "Always allow" for `def`: kept in the settings store (`engine::tools::ToolPrefs`), so its
    /// later calls run unasked, in every tab.
    pub(crate) async fn keep_always(&self, def: &ToolDef) -> Result<(), ToolsError> {
        let mut prefs = self.prefs().await;
        let key = always_key(def);
        if prefs.always.contains(&key) {
            return Ok(());
        }
        prefs.always.push(key);
        let v = serde_json::to_value(&prefs).unwrap_or_default();
        self.core.store.set_setting(PREFS_KEY, &v).await?;
        Ok(())
    }

    /// Runs call `call_id` of `def` with `arguments` in a turn of `conversation`: the result the
    /// model reads, or why it failed (which it reads too).
    /// Stop (`stopper`) cancels a running MCP call.
    pub(crate) async fn run(
        self: &Rc<Self>,
        conversation: &Conversation,
        def: &ToolDef,
        (call_id, arguments): (&str, &str),
        stopper: &Stopper,
    ) -> Result<String, String> {
        if let ToolSource::Mcp(_) = def.source {
            let (this, id) = (self.clone(), call_id.to_string());
            let cancel = Closure::once_into_js(move || this.mcp.cancel(&id));
            stopper.on_stop(cancel.unchecked_ref());
            return self.mcp.call(def, call_id, arguments).await;
        }
        let call = memory_tools::parse_call(&def.name, arguments)?;
        self.memory_call(conversation, call).await
    }

    /// A memory tool's call, over the store, within what the turn may read
    /// (`engine::memory_tools::Reach`); a failed read is the call's failure.
    async fn memory_call(
        &self,
        conversation: &Conversation,
        call: MemoryCall,
    ) -> Result<String, String> {
        let projects = self.core.store.load_projects().await.map_err(unread)?;
        let reach = Reach::of(conversation, &projects);
        match call {
            MemoryCall::Search { query } => {
                (self.search(&reach, &projects, &query).await).map_err(unread)
            }
            MemoryCall::Read {
                conversation_id,
                from,
                to,
            } => {
                let span = self.span(&reach, &projects, &conversation_id, from, to);
                let (c, messages) = span.await.map_err(unread)?;
                memory_tools::read_text(c.as_ref(), &messages)
            }
            MemoryCall::Facts => {
                let facts = self.core.user_facts().await.map_err(unread)?;
                Ok(memory_tools::facts_text(&facts, &reach))
            }
        }
    }

    /// [`MemoryCall::Search`]: the index read for the query's words, each conversation out of
    /// reach marked private (never a source).
    async fn search(
        &self,
        reach: &Reach,
        projects: &[Project],
        query: &str,
    ) -> Result<String, StoreError> {
        let words = memory_tools::search_words(query);
        let found = (self.core.store.messages_under(&words, LOOKUP_LIMIT).await?)
            .into_iter()
            .map(|(message, c)| Found {
                private: !reach.may_read(&c, projects),
                message,
                title: c.title,
            })
            .collect();
        Ok(memory_tools::search_text(found, &words, reach))
    }

    /// [`MemoryCall::Read`]: conversation `id` when the turn may read it, and its messages with
    /// seq in `from..=to`.
    async fn span(
        &self,
        reach: &Reach,
        projects: &[Project],
        id: &str,
        from: u64,
        to: u64,
    ) -> Result<(Option<Conversation>, Vec<Message>), StoreError> {
        let c =
            (self.core.store.get_conversation(id).await?).filter(|c| reach.may_read(c, projects));
        if c.is_none() {
            return Ok((None, Vec::new()));
        }
        let n = usize::try_from(to - from + 1).unwrap_or(usize::MAX);
        let mut messages = self
            .core
            .store
            .load_after(id, from.saturating_sub(1), n + 1)
            .await?;
        messages.retain(|m| m.seq >= from && m.seq <= to);
        Ok((c, messages))
    }
}
