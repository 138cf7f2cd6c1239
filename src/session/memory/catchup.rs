//! Building memory from a history (an import, or a conversation whose updates fell behind): a queue
//! run in the background, one conversation at a time and one chunk at a time. The chunks are the
//! engine's (`engine::memory::catchup`); each is an ordinary memory update (the memory endpoint and
//! settings, the remembered form and one retry in the next, a failure stored and shown, the
//! result written in one transaction), so the stored summary is where a later run resumes. Progress
//! goes out as [`Local::MemoryBuild`]; Cancel aborts the request in flight and writes
//! nothing of it. Started by the user, a run never waits out the back-off of automatic updates (like
//! "Retry"). A conversation that fails (its failure stored and shown in its memory pane) does not
//! stop the run: it goes on to the next, and at the end says which failed and why, with a retry of
//! only those; it gives up when the same failure comes three times in a row (the engine's
//! `BuildTally` decides and words it). Must not import `ui`.

use super::service::{Memory, MemoryError};
use super::update::memory_error;
use crate::engine::memory::catchup::{covered_count, next_request, plan, BuildFailure, BuildTally};
use crate::engine::memory::update::Chunk;
use crate::engine::memory::{MemoryError as ReplyError, UpdateLimits};
use crate::engine::model::Conversation;
use crate::engine::slots::Purpose;
use crate::engine::tabs::Change;
use crate::session::shared::error::Boxed;
use crate::session::shared::events::BuildStatus;
use crate::session::shared::events::Local;
use crate::transport::Stopper;
use std::rc::Rc;

/// Split point `memory`: a build of memory and everything only it reaches (the plan, the chunks).
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(memory, fallible, return_wrapper(let future = _; { future.await } -> Result<(), MemoryError>)))]
fn build_memory_split(memory: &Rc<Memory>, ids: Vec<String>) -> Boxed<'_, (), MemoryError> {
    Box::pin(memory.build_memory_here(ids))
}

/// How one conversation's build ended.
enum Built {
    /// Its memory covers its history; this many updates were written.
    Covered(usize),
    /// Cancelled: nothing of the request in flight was written.
    Cancelled,
}

impl Memory {
    /// Builds the memory of `ids`, one conversation at a time, in the background: a run already
    /// going takes them on after its own. Reports progress and the end as events (a memory chunk
    /// that cannot be fetched too: the build stops, saying so).
    pub async fn build_memory(self: &Rc<Self>, ids: Vec<String>) {
        if let Err(e) = build_memory_split(self, ids).await {
            self.report(BuildStatus::Stopped(e.to_string()));
        }
    }

    async fn build_memory_here(self: &Rc<Self>, ids: Vec<String>) -> Result<(), MemoryError> {
        let endpoint = self
            .core
            .settings
            .borrow()
            .memory_endpoint_for(&Default::default());
        if endpoint.base_url.trim().is_empty() {
            self.report(BuildStatus::Stopped(
                "Memory is off: no endpoint is set for memory updates. Open Settings, set the \
                 agent (or a memory model) and build again."
                    .into(),
            ));
            return Ok(());
        }
        let started = self.building(|q| {
            q.waiting.extend(ids);
            if q.stopper.is_some() {
                return None; // the run going on takes them
            }
            let stopper = Stopper::new();
            q.stopper = Some(stopper.clone());
            q.taken = 0;
            Some(stopper)
        });
        let Some(stopper) = started else {
            return Ok(());
        };
        let end = self.run_queue(&stopper).await;
        self.building(|q| {
            q.waiting.clear();
            q.stopper = None;
        });
        self.report(end);
        Ok(())
    }

    /// Cancels the memory build: the request in flight is aborted and nothing of it is written;
    /// what was built stays, and a later build goes on from there.
    pub fn cancel_memory_build(&self) {
        self.building(|q| {
            q.waiting.clear();
            if let Some(s) = q.stopper.as_ref() {
                s.stop();
            }
        });
    }

    fn report(&self, status: BuildStatus) {
        self.core.emit(Local::MemoryBuild(status));
    }

    /// Runs the queue until it is empty or cancelled, going on past a conversation that fails
    /// (until the same failure comes three times in a row); returns how it ended.
    async fn run_queue(self: &Rc<Self>, stopper: &Stopper) -> BuildStatus {
        let mut tally = BuildTally::default();
        const CANCELLED: &str = "Memory building cancelled; what was built is kept. Build again \
                                 to go on from there.";
        loop {
            if stopper.is_stopped() {
                return BuildStatus::Stopped(CANCELLED.into());
            }
            let next = self.building(|q| {
                let next = q.waiting.first().cloned();
                q.taken += usize::from(next.is_some());
                next
            });
            let Some(id) = next else {
                return Self::ended(&tally, &[]);
            };
            match self.build_conversation(&id, stopper).await {
                Ok(Built::Covered(n)) => tally.built(n),
                Err(MemoryError::NoConversation) => {} // deleted meanwhile: nothing to build
                Ok(Built::Cancelled) => return BuildStatus::Stopped(CANCELLED.into()),
                Err(e) => tally.failed(BuildFailure {
                    title: self.title_of(&id).await,
                    conversation_id: id.clone(),
                    reason: match e {
                        MemoryError::Failed(reason) => reason,
                        e => e.to_string(),
                    },
                }),
            }
            let rest = self.building(|q| {
                if q.waiting.first() == Some(&id) {
                    q.waiting.remove(0);
                }
                tally.gives_up().then(|| std::mem::take(&mut q.waiting))
            });
            if let Some(rest) = rest {
                return Self::ended(&tally, &rest);
            }
        }
    }

    /// How a run that was not cancelled ended.
    fn ended(tally: &BuildTally, not_reached: &[String]) -> BuildStatus {
        let text = tally.report(not_reached.len());
        if tally.failures().is_empty() && not_reached.is_empty() {
            BuildStatus::Done(text)
        } else {
            BuildStatus::Failed {
                text,
                retry: tally.retry(not_reached),
            }
        }
    }

    /// A conversation's title for the end of a run (its id if it cannot be read).
    async fn title_of(&self, id: &str) -> String {
        match self.core.store.get_conversation(id).await {
            Ok(Some(c)) => c.title,
            _ => id.to_string(),
        }
    }

    /// Builds one conversation's memory, chunk after chunk, holding its memory lock (so live
    /// updates, here or in another tab, wait or refuse meanwhile).
    async fn build_conversation(
        self: &Rc<Self>,
        id: &str,
        stopper: &Stopper,
    ) -> Result<Built, MemoryError> {
        let _lock = crate::session::shared::tabs::lock(&format!(
            "memoire-memory:{}:{id}",
            self.core.store.name()
        ))
        .await;
        let conv = self.core.conversation(id).await?;
        if stopper.is_stopped() {
            return Ok(Built::Cancelled);
        }
        self.state.with(|s| s.running.insert(id.to_string()));
        self.core.emit(Change::MemoryUpdating {
            conversation_id: id.to_string(),
            running: true,
        });
        let result = self.build_chunks(&conv, stopper).await;
        self.state.with(|s| s.running.remove(id));
        self.core.emit(Change::MemoryUpdating {
            conversation_id: id.to_string(),
            running: false,
        });
        result
    }

    /// The chunks of one conversation, each an update written whole, until memory covers the
    /// history the build read (messages added meanwhile are the next live update's).
    async fn build_chunks(
        self: &Rc<Self>,
        conv: &Conversation,
        stopper: &Stopper,
    ) -> Result<Built, MemoryError> {
        let id = conv.id.as_str();
        let config = self.core.config_for(conv);
        let limits = UpdateLimits::from_config(&config);
        let every = config.summary_every_pairs;
        let messages = self.core.store.load_all_messages(id).await?;
        // Memory is made of the branch on screen, never of the alternatives off it.
        let messages = self.core.on_branch(id, messages).await?;
        let mut previous = self.core.store.latest_summary(id).await?;
        let chunks = plan(
            &messages,
            previous.as_ref().map(|s| s.covers_up_to_seq),
            &limits,
            every,
        )
        .chunks
        .len();
        let endpoint = self
            .core
            .settings
            .borrow()
            .memory_endpoint_for(&conv.memory_overrides);
        let mut written = 0;
        for chunk in 1..=chunks {
            let graph = self
                .core
                .store
                .load_memory_graph(id, &endpoint.key())
                .await?;
            let existing = &graph.existing;
            let req = match next_request(previous.as_ref(), &messages, existing, &limits, every) {
                Err(ReplyError::NothingToSummarize) => break,
                other => other.map_err(memory_error)?,
            };
            self.report(self.running(conv, chunk, chunks));
            let chunk = Chunk {
                conversation_id: id.to_string(),
                slot: self.core.slot_use(&endpoint, Purpose::Memory),
                endpoint: endpoint.clone(),
                message_count: covered_count(
                    &messages,
                    req.span.to_seq,
                    &limits,
                    conv.message_count,
                ),
                seen_seq: req.span.to_seq,
                previous,
                req,
                config: config.clone(),
                graph,
            };
            let done = self.run_chunk(chunk, stopper).await.map_err(|e| match e {
                MemoryError::Quiet(reason) | MemoryError::Request(reason) => {
                    MemoryError::Failed(reason)
                }
                e => e,
            })?;
            if !done {
                return Ok(Built::Cancelled);
            }
            written += 1;
            previous = self.core.store.latest_summary(id).await?;
        }
        // What the user said about themselves in the history (an import), taken in once.
        self.user_span(&messages, &config).await.ok();
        Ok(Built::Covered(written))
    }

    /// The progress of chunk `chunk` of `chunks` of `conv`.
    fn running(&self, conv: &Conversation, chunk: usize, chunks: usize) -> BuildStatus {
        let (taken, waiting) = self.building(|q| (q.taken, q.waiting.len()));
        BuildStatus::Running {
            conversation_id: conv.id.clone(),
            title: conv.title.clone(),
            conversation: taken,
            conversations: taken + waiting.saturating_sub(1),
            chunk,
            chunks,
        }
    }
}
