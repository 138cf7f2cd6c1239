//! When a memory update may talk to its server, and what an update that did not land means.
//!
//! A chat turn always goes first. Local servers run one request of a model at a time
//! (llama-cpp-python, Ollama, LM Studio, llama-server with one slot): llama-cpp-python
//! (`interrupt_requests=True`, its default) ends a running stream with `[DONE]` as soon as another
//! request waits, the others queue the chat behind the update. So a memory update waits while a chat
//! turn of this tab is in flight on its server, a chat turn that starts stops the updates running on
//! its server, and an update that ended that way — stopped, cut short (an early `[DONE]` with an empty
//! or cut reply, a dropped stream), or refused as busy (503, 429) while a chat overlapped it — is
//! *deferred*, not failed: it runs again once the server is idle, with no back-off and no error shown.
//! Only an update that fails on an idle server counts as a failure ([`judge`]). Deferring loses
//! nothing: the summary's `covers_up_to_seq` has not moved, so the next update covers the same
//! messages and those after them, and until then they stay in the prompt while they fit.
//!
//! Sans-IO in the quinn-proto style: the session reports chat turns and updates through `handle_*`
//! and executes what [`Scheduler::poll_action`] asks (stop an update, start one). Servers are told
//! apart by origin ([`server_of`]). What one tab cannot see (another tab's chat, another app on the
//! same server) reaches [`judge`] as an idle server. Must not import anything outside `crate::engine`.

use std::collections::{BTreeMap, VecDeque};

use crate::engine::failure::FailureKind;

/// The server a base URL talks to: `scheme://host:port`, lower-cased, the path left out (a chat and a
/// memory endpoint on one server may differ in path only). The default port of the scheme is written
/// out, so `http://h` and `http://h:80/v1` are one server.
pub fn server_of(base_url: &str) -> String {
    let url = base_url.trim();
    let (scheme, rest) = match url.split_once("://") {
        Some((s, r)) => (s.to_ascii_lowercase(), r),
        None => (String::from("http"), url),
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority
        .rsplit('@')
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    let has_port = match host_port.rfind(':') {
        Some(i) => !host_port[i..].contains(']'),
        None => false,
    };
    if has_port {
        format!("{scheme}://{host_port}")
    } else {
        let port = if scheme == "https" { 443 } else { 80 };
        format!("{scheme}://{host_port}:{port}")
    }
}

/// How one update's request ended, as the session saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpdateEnd {
    /// The reply parsed and the new memory was stored.
    Landed,
    /// This tab stopped it (a chat turn came, or the user cancelled).
    Stopped,
    /// A reply came but could not be used: empty, cut, or not the update's shape.
    Unusable,
    /// The request failed: an HTTP error, a dropped or malformed stream, a timeout.
    Failed(FailureKind),
    /// It could not be built or its result could not be stored: a failure of this tab, whatever the
    /// server did.
    Broken,
}

impl UpdateEnd {
    /// How an update the session ran ended, as the scheduler counts it: `Ok(stored)` (false: it
    /// stopped before it stored anything), or `Err(deferred)`: true when it gave way to a chat turn
    /// on its server (as an unusable reply: it runs again), false for a failure of any other kind.
    pub fn of_run(result: Result<bool, bool>) -> UpdateEnd {
        match result {
            Ok(true) => UpdateEnd::Landed,
            Ok(false) => UpdateEnd::Stopped,
            Err(true) => UpdateEnd::Unusable,
            Err(false) => UpdateEnd::Broken,
        }
    }
}

/// What an ended update means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The memory moved on.
    Landed,
    /// Cut short or refused because a chat turn came: run it again once the server is idle; not a
    /// failure (no back-off, no error shown, nothing recorded).
    Deferred,
    /// Failed on an idle server: record it (the back-off of `due::retry_allowed` applies) and say so.
    Failed,
    /// Stopped by the user: nothing to record, nothing to run again.
    Cancelled,
}

/// Decides what an update's end means. `contended`: a chat turn to the same server started while the
/// update ran. A contended update that did not land is deferred unless the server's answer says the
/// request itself is wrong (a key, a URL or model, a bad request): those fail whatever else ran.
pub fn judge(end: &UpdateEnd, contended: bool) -> Verdict {
    match end {
        UpdateEnd::Landed => Verdict::Landed,
        UpdateEnd::Stopped if contended => Verdict::Deferred,
        UpdateEnd::Stopped => Verdict::Cancelled,
        UpdateEnd::Unusable if contended => Verdict::Deferred,
        UpdateEnd::Failed(kind) if contended && !about_the_request(kind) => Verdict::Deferred,
        UpdateEnd::Unusable | UpdateEnd::Failed(_) | UpdateEnd::Broken => Verdict::Failed,
    }
}

/// Failures that say the request is wrong, not that the server was busy.
fn about_the_request(kind: &FailureKind) -> bool {
    matches!(
        kind,
        FailureKind::Auth
            | FailureKind::NotFound
            | FailureKind::BadRequest
            | FailureKind::SessionGone
            | FailureKind::Redirected
            | FailureKind::ContextTooLong { .. }
    )
}

/// Whether an update may go out now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Send it; report its end with [`Scheduler::handle_update_ended`].
    Start,
    /// Not now (a chat turn is in flight on its server, or this conversation's update is running):
    /// it is remembered and [`Scheduler::poll_action`] starts it when that is over.
    Wait,
}

/// What the scheduler asks the session to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Stop this conversation's running update (a chat turn needs its server).
    Stop { conversation_id: String },
    /// Run this conversation's update now, if it is still due (its server is idle).
    Start { conversation_id: String },
}

#[derive(Debug, Clone)]
struct Running {
    server: String,
    /// A chat turn to the same server started while it ran.
    contended: bool,
}

/// The memory updates and chat turns of one tab, by server.
#[derive(Debug, Default)]
pub struct Scheduler {
    /// Chat turns in flight, by server.
    chats: BTreeMap<String, usize>,
    /// Updates running, by conversation.
    running: BTreeMap<String, Running>,
    /// Updates waiting for their server to be idle, by conversation.
    waiting: BTreeMap<String, String>,
    actions: VecDeque<Action>,
}

impl Scheduler {
    /// A chat turn to `server` is about to send its request: every update running on that server is
    /// to be stopped (and will run again after the turn).
    pub fn handle_chat_started(&mut self, server: &str) {
        *self.chats.entry(server.to_string()).or_default() += 1;
        for (id, r) in self.running.iter_mut() {
            if r.server == server {
                if !r.contended {
                    self.actions.push_back(Action::Stop {
                        conversation_id: id.clone(),
                    });
                }
                r.contended = true;
            }
        }
    }

    /// A chat turn to `server` is over (finished, failed or stopped).
    pub fn handle_chat_ended(&mut self, server: &str) {
        if let Some(n) = self.chats.get_mut(server) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.chats.remove(server);
            }
        }
        self.release(server);
    }

    /// A memory update of `conversation_id` on `server` is due.
    pub fn handle_update_wanted(&mut self, conversation_id: &str, server: &str) -> Admit {
        if self.chats.contains_key(server) || self.running.contains_key(conversation_id) {
            self.waiting
                .insert(conversation_id.to_string(), server.to_string());
            return Admit::Wait;
        }
        self.waiting.remove(conversation_id);
        self.running.insert(
            conversation_id.to_string(),
            Running {
                server: server.to_string(),
                contended: false,
            },
        );
        Admit::Start
    }

    /// The update of `conversation_id` ended as `end`. A deferred update waits for its server.
    pub fn handle_update_ended(&mut self, conversation_id: &str, end: &UpdateEnd) -> Verdict {
        let Some(run) = self.running.remove(conversation_id) else {
            return judge(end, false);
        };
        let verdict = judge(end, run.contended);
        if verdict == Verdict::Deferred {
            self.waiting
                .insert(conversation_id.to_string(), run.server.clone());
        }
        self.release(&run.server);
        verdict
    }

    /// Whether no chat turn of this tab is in flight on `server`.
    pub fn is_idle(&self, server: &str) -> bool {
        !self.chats.contains_key(server)
    }

    /// Whether a chat turn to its server came while the update of `conversation_id` ran.
    pub fn is_contended(&self, conversation_id: &str) -> bool {
        self.running
            .get(conversation_id)
            .is_some_and(|r| r.contended)
    }

    /// Whether an update of `conversation_id` is running.
    pub fn is_running(&self, conversation_id: &str) -> bool {
        self.running.contains_key(conversation_id)
    }

    /// The next thing to do, oldest first.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// Starts the waiting updates of `server` once it is idle (each once; one not running).
    fn release(&mut self, server: &str) {
        if self.chats.contains_key(server) {
            return;
        }
        let ready: Vec<String> = self
            .waiting
            .iter()
            .filter(|(id, s)| s.as_str() == server && !self.running.contains_key(*id))
            .map(|(id, _)| id.clone())
            .collect();
        for id in ready {
            self.waiting.remove(&id);
            self.actions.push_back(Action::Start {
                conversation_id: id,
            });
        }
    }
}
